package tui

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
	"github.com/cpid-dev/cpid/sqlite"
)

var update = flag.Bool("update", false, "rewrite the golden screens in testdata/")

const bundle = "../../../fixtures/basic/bundle"

// fixtureDB is a database ingested and reconstructed from the real fixture,
// built once for the package's tests, which only read it.
func fixtureDB() (string, error) { return fixtureDBOf("basic") }

var fixtureDBs = struct {
	sync.Mutex
	paths map[string]string
	errs  map[string]error
}{paths: map[string]string{}, errs: map[string]error{}}

// fixtureDBOf is the database of fixtures/NAME, built once.
func fixtureDBOf(name string) (string, error) {
	fixtureDBs.Lock()
	defer fixtureDBs.Unlock()
	if p, ok := fixtureDBs.paths[name]; ok {
		return p, fixtureDBs.errs[name]
	}
	dir, err := os.MkdirTemp("", "cpid-tui-test")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "cpid.db")
	err = fill(path, "../../../fixtures/"+name+"/bundle")
	fixtureDBs.paths[name], fixtureDBs.errs[name] = path, err
	return path, err
}

// fill ingests paths into the database at path and reconstructs.
func fill(path string, paths ...string) error {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		return err
	}
	defer st.Close()
	sum, err := (&ingest.Ingester{Sink: st}).Run(ctx, paths)
	if err != nil {
		return err
	}
	if len(sum.ReadErrors) > 0 {
		return fmt.Errorf("ingest: %v", sum.ReadErrors)
	}
	_, err = reconstruct.Run(ctx, st, reconstruct.Options{Full: false, Family: ingest.Family})
	return err
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, path := range fixtureDBs.paths {
		os.RemoveAll(filepath.Dir(path))
	}
	os.Exit(code)
}

// fixedNow is the clock of the status line in tests.
func fixedNow() time.Time { return time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC) }

// newTest opens the fixture database and returns a model of w x h cells,
// with its first screen loaded.
func newTest(t *testing.T, w, h int, opt Options) *Model {
	t.Helper()
	return newTestOf(t, "basic", w, h, opt)
}

// newTestOf is newTest on fixtures/fixture.
func newTestOf(t *testing.T, fixture string, w, h int, opt Options) *Model {
	t.Helper()
	path, err := fixtureDBOf(fixture)
	if err != nil {
		t.Fatal(err)
	}
	return newTestAt(t, path, w, h, opt)
}

func newTestAt(t testing.TB, path string, w, h int, opt Options) *Model {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if opt.Now == nil {
		opt.Now = fixedNow
	}
	m := New(context.Background(), st, opt)
	drive(t, m, tea.WindowSizeMsg{Width: w, Height: h})
	run(t, m, m.Init())
	return m
}

// run executes cmd and every command that follows from it, in this
// goroutine, feeding their messages to the model: what the Bubble Tea
// runtime does, minus the concurrency. It reports whether the model quit.
func run(t testing.TB, m *Model, cmd tea.Cmd) bool {
	t.Helper()
	queue := []tea.Cmd{cmd}
	for n := 0; len(queue) > 0; n++ {
		if n > 1000 {
			t.Fatal("commands do not settle")
		}
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil:
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case tea.QuitMsg:
			return true
		default:
			_, next := m.Update(msg)
			queue = append(queue, next)
		}
	}
	return false
}

// drive sends messages to the model, running what each one starts.
func drive(t testing.TB, m *Model, msgs ...tea.Msg) bool {
	t.Helper()
	quit := false
	for _, msg := range msgs {
		_, cmd := m.Update(msg)
		quit = run(t, m, cmd) || quit
	}
	return quit
}

// press sends keys by name: "j", "enter", "esc", "tab", "shift+tab",
// "space", "up", "down", "ctrl+c"...
func press(t testing.TB, m *Model, names ...string) bool {
	t.Helper()
	var msgs []tea.Msg
	for _, n := range names {
		msgs = append(msgs, keyMsg(n))
	}
	return drive(t, m, msgs...)
}

func keyMsg(name string) tea.KeyPressMsg {
	special := map[string]tea.KeyPressMsg{
		"enter":     {Code: tea.KeyEnter},
		"esc":       {Code: tea.KeyEscape},
		"tab":       {Code: tea.KeyTab},
		"shift+tab": {Code: tea.KeyTab, Mod: tea.ModShift},
		"space":     {Code: tea.KeySpace, Text: " "},
		"up":        {Code: tea.KeyUp},
		"down":      {Code: tea.KeyDown},
		"left":      {Code: tea.KeyLeft},
		"right":     {Code: tea.KeyRight},
		"backspace": {Code: tea.KeyBackspace},
		"ctrl+c":    {Code: 'c', Mod: tea.ModCtrl},
	}
	if k, ok := special[name]; ok {
		return k
	}
	r := []rune(name)
	return tea.KeyPressMsg{Code: r[0], Text: name}
}

// typeText types text into whatever has the keys.
func typeText(t testing.TB, m *Model, text string) {
	t.Helper()
	for _, r := range text {
		press(t, m, string(r))
	}
}

// plain is what the model shows, without styles.
func plain(m *Model) string { return ansi.Strip(m.Render()) }

// golden compares the screen with testdata/name.golden.
func golden(t *testing.T, m *Model, name string) {
	t.Helper()
	got := plain(m) + "\n"
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("screen %s differs from %s (go test -update rewrites it):\n%s", name, path, got)
	}
}

// openChange opens the change at row i of the newest-first list.
func openChange(t *testing.T, m *Model, i int) *changeScreen {
	t.Helper()
	press(t, m, "g")
	for ; i > 0; i-- {
		press(t, m, "j")
	}
	press(t, m, "enter")
	c, ok := m.top().(*changeScreen)
	if !ok || !c.loaded || c.err != nil {
		t.Fatalf("enter did not open a change: %T %+v", m.top(), m.top())
	}
	return c
}

// rollout is the row of the fixture's rolling update (a patch of the
// Deployment's template) in the newest-first list.
const rollout = 1

func TestGoldenScreens(t *testing.T) {
	type screen struct {
		name    string
		fixture string // fixtures/NAME, basic when ""
		w, h    int
		keys    []string
		text    string // typed after keys
	}
	cases := []screen{
		{name: "changes", w: 100, h: 30},
		{name: "changes-sort-duration", w: 100, h: 30, keys: []string{"s"}},
		{name: "changes-filter", w: 100, h: 30, keys: []string{"/"}, text: "service"},
		{name: "change-dag", w: 100, h: 30, keys: []string{"j", "enter"}},
		{name: "change-dag-collapsed", w: 100, h: 30, keys: []string{"j", "enter", "j", "j", "j", "j", "space"}},
		{name: "change-timeline", w: 100, h: 30, keys: []string{"j", "enter", "tab", "j", "j", "j", "j"}},
		{name: "change-timeline-zoom", w: 100, h: 30, keys: []string{"j", "enter", "2", "G", "+", "+"}},
		{name: "change-timeline-objects", w: 100, h: 30, keys: []string{"j", "enter", "2", "v", "j", "j"}},
		{name: "change-timeline-filter", w: 100, h: 30, keys: []string{"j", "enter", "2", "/"}, text: "endpoint"},
		{name: "change-logs", w: 100, h: 30, keys: []string{"j", "enter", "2", "j", "j", "j", "j", "3"}},
		{name: "change-revisions", w: 100, h: 30, keys: []string{"j", "enter", "4"}},
		{name: "change-revisions-first", w: 100, h: 30, keys: []string{"j", "enter", "4", "g"}},
		{name: "help-changes", w: 100, h: 30, keys: []string{"?"}},
		{name: "help-timeline", w: 100, h: 30, keys: []string{"j", "enter", "2", "?"}},
		{name: "history", w: 100, h: 30, keys: []string{"j", "enter", "2", "j", "H"}},
		{name: "history-revisions-80x24", w: 80, h: 24, keys: []string{"j", "enter", "4", "H", "k"}},
	}
	// Every view at 80x24 and 160x48.
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		for _, v := range []screen{
			{name: "changes"},
			{name: "changes-marked", keys: []string{"j", "j", "j", "space", "k"}},
			{name: "command", keys: []string{":"}, text: "history deploy/web"},
			{name: "change-dag", keys: []string{"j", "enter"}},
			{name: "change-dag-nested", fixture: "figure-5", keys: []string{"enter"}},
			{name: "change-timeline", keys: []string{"j", "enter", "2", "j", "j", "j"}},
			{name: "change-timeline-slowest", keys: []string{"j", "enter", "S"}},
			{name: "change-logs", keys: []string{"j", "enter", "2", "j", "j", "j", "3"}},
			{name: "change-logs-instrumented", fixture: "instrumented", keys: []string{"j", "enter", "2", "j", "j", "j", "3"}},
			{name: "change-revisions", keys: []string{"j", "enter", "4"}},
			{name: "history", keys: []string{"j", "enter", "2", "j", "H"}},
			{name: "help", keys: []string{"j", "enter", "2", "?"}},
			{name: "anomalies", fixture: "node-loss", keys: []string{":"}, text: "anomalies\n"},
			{name: "change-timeline-anomaly", fixture: "node-loss", keys: []string{":"}, text: "anomalies\n\n"},
			{name: "diff", keys: []string{"j", "j", "j", "space", "k", "d"}},
		} {
			v.name = fmt.Sprintf("%s-%dx%d", v.name, size[0], size[1])
			v.w, v.h = size[0], size[1]
			cases = append(cases, v)
		}
	}
	// The timeline of a long reason (a scale into a leadership gap, on its
	// slowest hop), and the changes around it, at 80x24, 120x40, 200x50;
	// w shows the cut text whole.
	for _, size := range [][2]int{{80, 24}, {120, 40}, {200, 50}} {
		for _, v := range []screen{
			{name: "changes-leader-gap", fixture: "leader-gap-scale"},
			{name: "change-timeline-leader-gap", fixture: "leader-gap-scale", keys: []string{"s", "S"}},
			{name: "change-timeline-leader-gap-wrap", fixture: "leader-gap-scale", keys: []string{"s", "S", "w"}},
		} {
			v.name = fmt.Sprintf("%s-%dx%d", v.name, size[0], size[1])
			v.w, v.h = size[0], size[1]
			cases = append(cases, v)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newTestOf(t, cmp.Or(c.fixture, "basic"), c.w, c.h, Options{})
			press(t, m, c.keys...)
			for _, part := range strings.SplitAfter(c.text, "\n") {
				typeText(t, m, strings.TrimSuffix(part, "\n"))
				if strings.HasSuffix(part, "\n") {
					press(t, m, "enter")
				}
			}
			checkSize(t, m, c.w, c.h)
			golden(t, m, c.name)
		})
	}
}

// checkSize fails unless the screen is exactly w x h cells.
func checkSize(t *testing.T, m *Model, w, h int) {
	t.Helper()
	lines := strings.Split(plain(m), "\n")
	if len(lines) != h {
		t.Errorf("screen has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n != w {
			t.Errorf("line %d is %d cells wide, want %d: %q", i+1, n, w, l)
		}
	}
}
