package main

import (
	"path/filepath"
	"testing"
)

// operatorFixtures are the recordings of the example controller-runtime
// operator (examples/webapp-operator): a user creates a WebApp, scales it,
// changes its image and deletes it; the operator makes a Deployment and a
// Service it owns. operator ran it as it is, operator-instrumented with its
// one line of cpid (and the Deployment and ReplicaSet controllers
// instrumented).
var operatorFixtures = []string{"operator", "operator-instrumented"}

// operatorKinds are the custom resources of the recorded operators, which
// the recorder snapshots with the workloads (fixtures/recorder/scenarios/
// operator.sh).
var operatorKinds = map[string]string{"WebApp": "webapps"}

// TestAttributionOperator: on the operator's recordings, every user
// action's change (the WebApp created, scaled, given a new image, deleted)
// holds exactly the objects its ground truth saw change, the WebApp's own
// status writes included: with the CPIDs, and without them (operator) from
// owner references alone.
func TestAttributionOperator(t *testing.T) {
	t.Parallel()
	for _, f := range operatorFixtures {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			checkAttribution(t, f, 1, 1)
		})
	}
}

// TestOperatorCascadeCPIDs: in operator-instrumented, the change the
// user's create of WebApp web started carries one CPID, read from the
// objects' annotations at every hop, from the custom resource down to the
// Pods: WebApp (the user's root) -> Deployment and Service (the operator)
// -> ReplicaSet (the deployment controller) -> Pods (the replicaset
// controller), each write caused by the one above it, exactly.
func TestOperatorCascadeCPIDs(t *testing.T) {
	t.Parallel()
	db := openDB(t, reconstructedFixture(t, filepath.Join("../../fixtures", "operator-instrumented", "bundle")))
	var change, root string
	var rootEvent int64
	if err := db.QueryRow(`SELECT c.id, r.cpid, r.event_id FROM changes c JOIN revisions r ON r.change_id = c.id
		JOIN audit_events e ON e.id = r.event_id
		WHERE c.verb = 'create' AND c.resource = 'webapps' AND c.name = 'web' AND r.resource = 'webapps' AND e.verb = 'create'`).
		Scan(&change, &root, &rootEvent); err != nil {
		t.Fatalf("the user's create of WebApp web: %v", err)
	}
	if change != root {
		t.Errorf("the change %s is not named by its root CPID %s", change, root)
	}

	// hop is one expected write of the cascade: its writer creates an
	// object of resource, caused by a create of cause.
	type hop struct{ writer, resource, cause string }
	hops := []hop{
		{"webapp-operator", "deployments", "webapps"},
		{"webapp-operator", "services", "webapps"},
		{"deployment-controller", "replicasets", "deployments"},
		{"replicaset-controller", "pods", "replicasets"},
	}
	events := map[string]int64{"webapps": rootEvent}
	pods := 0
	for _, h := range hops {
		rows, err := db.Query(`SELECT r.event_id, COALESCE(r.cpid, ''), r.cpid_origin, COALESCE(r.confidence, ''),
			COALESCE(r.cause_event_id, 0), COALESCE(c.resource, ''), COALESCE(c.verb, ''), COALESCE(c.subresource, '')
			FROM revisions r JOIN audit_events e ON e.id = r.event_id LEFT JOIN audit_events c ON c.id = r.cause_event_id
			WHERE r.change_id = ? AND r.writer = ? AND r.resource = ? AND e.verb = 'create' AND e.subresource = '' AND r.attempt = 0`,
			change, h.writer, h.resource)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id, cause int64
			var cpid, origin, confidence, causeRes, causeVerb, causeSub string
			if err := rows.Scan(&id, &cpid, &origin, &confidence, &cause, &causeRes, &causeVerb, &causeSub); err != nil {
				t.Fatal(err)
			}
			n++
			if cpid != root || origin != "annotation" || confidence != "exact" {
				t.Errorf("%s's create of %s (event %d): CPID %s (%s, %s), want %s from its annotation, exact",
					h.writer, h.resource, id, cpid, origin, confidence, root)
			}
			if causeRes != h.cause || causeVerb != "create" || causeSub != "" || h.resource != "pods" && cause != events[h.cause] {
				t.Errorf("%s's create of %s (event %d): caused by %s %s/%s (event %d), want the create of the %s (event %d)",
					h.writer, h.resource, id, causeVerb, causeRes, causeSub, cause, h.cause, events[h.cause])
			}
			if h.resource == "pods" {
				pods++
				if cause != events["replicasets"] {
					t.Errorf("Pod (event %d) caused by event %d, not the ReplicaSet's create (event %d)", id, cause, events["replicasets"])
				}
			}
			events[h.resource] = id
		}
		rows.Close()
		if n == 0 {
			t.Errorf("no create of %s by %s in change %s", h.resource, h.writer, change)
		}
	}
	if pods != 2 { // spec.replicas of the WebApp
		t.Errorf("%d Pods created in the change, want 2", pods)
	}
	t.Logf("change %.8s: WebApp -> Deployment, Service -> ReplicaSet -> %d Pods, one CPID from the annotations", change, pods)
}

// TestEdgesOperator: the instrumented operator's writes (its creates and
// updates of Deployments and Services) are caused, when inference alone
// decides (--ignore-cpids), by the writes their CPIDs name: every one.
func TestEdgesOperator(t *testing.T) {
	t.Parallel()
	p, r, n, wrong, byWriter := measureEdges(t, "operator-instrumented")
	for w, c := range byWriter {
		t.Logf("%-22s %d writes with a CPID truth, %d given a cause, %d right", w, c.truth, c.given, c.right)
	}
	t.Logf("all %d: precision %.3f recall %.3f %v", n, p, r, wrong)
	c := byWriter["webapp-operator"]
	if c == nil || c.truth == 0 {
		t.Fatalf("no write of webapp-operator carries a CPID")
	}
	if c.right != c.truth || c.given != c.truth {
		t.Errorf("webapp-operator: %d of %d writes given the cause their CPIDs name (%d given one):\n%v", c.right, c.truth, c.given, wrong)
	}
}

// TestOperatorChangesBothWays: every write of operator-instrumented belongs
// to the same change, named by the same root write, whether reconstruct
// reads the CPIDs or infers everything (--ignore-cpids): the instrumented
// run's CPIDs and the inference agree write for write.
func TestOperatorChangesBothWays(t *testing.T) {
	t.Parallel()
	bundle := filepath.Join("../../fixtures", "operator-instrumented", "bundle")
	roots := func(ignore bool) map[int64]int64 {
		dbPath := filepath.Join(t.TempDir(), "cpid.db")
		if code, out, e := runCmd(t, nil, "ingest", "--db", dbPath, bundle); code != 0 {
			t.Fatalf("ingest: %d\n%s%s", code, out, e)
		}
		args := []string{"reconstruct", "--db", dbPath}
		if ignore {
			args = append(args, "--ignore-cpids")
		}
		if code, out, e := runCmd(t, nil, args...); code != 0 {
			t.Fatalf("%v: %d\n%s%s", args, code, out, e)
		}
		rows, err := openDB(t, dbPath).Query(`SELECT r.event_id, COALESCE(c.event_id, 0) FROM revisions r
			LEFT JOIN changes c ON c.id = r.change_id WHERE r.attempt = 0`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[int64]int64{}
		for rows.Next() {
			var id, root int64
			if err := rows.Scan(&id, &root); err != nil {
				t.Fatal(err)
			}
			out[id] = root
		}
		return out
	}
	withCPIDs, inferred := roots(false), roots(true)
	same, inChange := 0, 0
	for id, root := range withCPIDs {
		if inferred[id] != root {
			t.Errorf("write %d: in the change of write %d with the CPIDs, of write %d inferred", id, root, inferred[id])
			continue
		}
		same++
		if root != 0 {
			inChange++
		}
	}
	if len(inferred) != len(withCPIDs) || inChange == 0 {
		t.Errorf("%d writes with the CPIDs, %d inferred, %d in a change", len(withCPIDs), len(inferred), inChange)
	}
	t.Logf("%d of %d writes in the same change both ways (%d of them in a change)", same, len(withCPIDs), inChange)
}
