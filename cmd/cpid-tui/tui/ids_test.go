package tui

import (
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/sqlite"
)

// countingReader counts the reads of every CPID (cpid.IDLength's).
type countingReader struct {
	cpid.ChangeReader
	cpids int
}

func (c *countingReader) CPIDs(ctx context.Context, prefix string, limit int) ([]string, error) {
	if prefix == "" {
		c.cpids++
	}
	return c.ChangeReader.CPIDs(ctx, prefix, limit)
}

// TestIDsUniquePrefix: ids are shown by their shortest prefix unique in
// the database, 8 characters or more, as git and the CLI show them
// (cpid.IDLength): in a copy of the fixture's database where a second
// change (and its root CPID) shares the first 10 characters of one, the
// changes list and the DAG show 11, and that prefix opens
// the change. The length is read once per data version, not per frame.
func TestIDsUniquePrefix(t *testing.T) {
	src, err := fixtureDB()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "twins.db")
	copyFile(t, src, path)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs, err := st.Changes(ctx, cpid.ChangeQuery{Limit: 1000})
	if err != nil || len(cs) < 2 {
		t.Fatalf("changes: %v %v", cs, err)
	}
	x := cs[rollout].ID
	c := byte('0')
	if x[10] == c {
		c = '1'
	}
	twin := x[:10] + string(c) + x[11:]
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TEMP TABLE twin AS SELECT * FROM changes WHERE id = ?1`,
		`UPDATE twin SET id = ?2`,
		`INSERT INTO changes SELECT * FROM twin`,
		// A change's id is its root CPID: in the merge graph too.
		`INSERT INTO mergelogs (cpid, ts_ns, service, origin, cluster) SELECT ?2, ts_ns, service, origin, cluster FROM mergelogs WHERE cpid = ?1`,
	} {
		if _, err := conn.ExecContext(ctx, q, x, twin); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	db.Close()

	reader := &countingReader{ChangeReader: st}
	m := New(ctx, reader, Options{Now: fixedNow})
	drive(t, m, tea.WindowSizeMsg{Width: 100, Height: 30})
	run(t, m, m.Init())
	statusLine := func() string {
		lines := strings.Split(plain(m), "\n")
		return lines[len(lines)-2]
	}
	list := m.stack[0].(*changesScreen)
	seen := 0
	for i := range list.rows {
		id := list.rows[list.cursor].ID
		if s := statusLine(); !strings.Contains(s, " "+id[:11]+" ") {
			t.Errorf("row %d: the status line does not show %s by its first 11 characters: %q", i, id, s)
		}
		if id == x || id == twin {
			seen++
		}
		press(t, m, "j")
	}
	if seen != 2 {
		t.Fatalf("the list shows %d of the twins %s and %s", seen, x, twin)
	}

	runCommand(t, m, "change "+x[:8])
	if s := statusLine(); len(m.stack) != 1 || !strings.Contains(s, "starts several") {
		t.Errorf(":change %s: want it ambiguous, got %q", x[:8], s)
	}
	runCommand(t, m, "change "+x[:11])
	ch, ok := m.top().(*changeScreen)
	if !ok || ch.id != x {
		t.Fatalf(":change %s opened %q, want change %s", x[:11], m.top().crumb(), x)
	}
	screen := plain(m)
	if !strings.Contains(screen, "▾ "+x[:11]+" root") || strings.Contains(screen, "▾ "+x[:12]) {
		t.Errorf("the DAG does not show the root CPID %s by its first 11 characters:\n%s", x, screen)
	}
	for range 5 {
		press(t, m, "j", "tab")
		_ = m.Render()
	}
	press(t, m, "ctrl+r")
	if reader.cpids != 1 {
		t.Errorf("every CPID was read %d times, want once for the data version", reader.cpids)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
