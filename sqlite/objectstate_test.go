package sqlite

import (
	"fmt"
	"strings"
	"testing"
)

// TestMergelogsOfPlan: an incremental run asks for the mergelogs of each
// CPID it meets, and of their ancestors; the query goes from the CPIDs to
// their mergelogs by index, reads no other mergelog of the cluster, and
// sorts nothing in a temporary b-tree (what cost most of a call).
func TestMergelogsOfPlan(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	for _, n := range []int{1, 3} {
		args := []any{"default"}
		for i := range n {
			args = append(args, fmt.Sprint("c", i))
		}
		args = append(args, int64(1))
		plan := queryPlan(t, s, fmt.Sprintf(mergelogsOfSQL, strings.TrimSuffix(strings.Repeat("?, ", n), ", ")), args...)
		if !strings.Contains(plan, "SEARCH m USING INDEX mergelogs_cpid_origin (cluster=? AND cpid=?)") {
			t.Errorf("%d CPIDs: the mergelogs are not found by CPID:\n%s", n, plan)
		}
		if strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN m") {
			t.Errorf("%d CPIDs: the query sorts or reads every mergelog:\n%s", n, plan)
		}
	}
}

// TestObjectStatePlan: an incremental run reads the saved state of each
// object it meets by its key, and of each owner by its uid, each by an
// index of its own (not the cluster's rows, read by the primary key).
func TestObjectStatePlan(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	if plan := queryPlan(t, s, objectSQL, "default", "pods/ns/p"); !strings.Contains(plan, "(cluster=? AND key=?)") {
		t.Errorf("an object's state is not read by its key:\n%s", plan)
	}
	if plan := queryPlan(t, s, objectByUIDSQL, "u", "default"); !strings.Contains(plan, "USING INDEX reconstruct_objects_uid (uid=?") {
		t.Errorf("an object's state is not read by its uid:\n%s", plan)
	}
}
