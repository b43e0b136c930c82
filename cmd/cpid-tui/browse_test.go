package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cpid-dev/cpid"
)

func TestBrowseUsage(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing database", []string{"browse", "--db", filepath.Join(dir, "nope.db")}, 1, "no database at"},
		{"extra argument", []string{"browse", "--db", filepath.Join(dir, "x.db"), "extra"}, 2, "Usage: cpid-tui browse"},
		{"negative refresh", []string{"browse", "--refresh", "-1s"}, 2, "Usage: cpid-tui browse"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, nil, c.args...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
			}
		})
	}
	// Not a terminal: refused with a pointer to query, and the database
	// is not created.
	db := filepath.Join(dir, "cpid.db")
	if code, _, stderr := runCmd(t, nil, "ingest", "--db", db, basicBundle); code != 0 {
		t.Fatalf("ingest: %d %s", code, stderr)
	}
	code, _, stderr := runCmd(t, nil, "browse", "--db", db)
	if code != 1 || !strings.Contains(stderr, "browse needs a terminal") {
		t.Errorf("browse without a terminal: exit %d, %q", code, stderr)
	}
}

// tmuxSession runs a command in a detached tmux session of its own server
// and reads its screen.
type tmuxSession struct {
	t    *testing.T
	tmux string
	sock string
	conf string
	wake chan struct{} // told of the pane's output, see newTmux
}

func newTmux(t *testing.T, name string, w, h int, command string) *tmuxSession {
	t.Helper()
	path, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is missing (.ci/run installs it)")
		}
		t.Skip("tmux is not installed")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "tmux.conf")
	// remain-on-exit keeps the pane, and what the shell printed, after the
	// program ends.
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g status off\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A server of its own, its socket in the test's directory.
	s := &tmuxSession{t: t, tmux: path, sock: filepath.Join(dir, name+".sock"), conf: conf, wake: make(chan struct{}, 1)}
	// The shell prints the program's exit status, then signals the
	// channel exited waits on (tmux remembers a signal no client waits
	// for yet).
	s.run("new-session", "-d", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h),
		command+"; echo cpid-exit=$?; "+shellQuote(path)+" -S "+shellQuote(s.sock)+" wait-for -S cpid-exit")
	t.Cleanup(func() { exec.Command(s.tmux, "-S", s.sock, "kill-server").Run() })
	// A control client (tmux -C, which leaves the window's size alone)
	// prints a notification of each output of the pane, and of each
	// resize: the waits look at the screen again then, instead of polling
	// it. tmux sends them once the output is on the screen (its server
	// writes to clients after it parsed the output), so no change is
	// missed. It ends when its input does.
	cc := exec.Command(s.tmux, "-S", s.sock, "-f", s.conf, "-C", "attach-session", "-f", "ignore-size,read-only")
	in, err := cc.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cc.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cc.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		b := make([]byte, 32<<10)
		for {
			n, err := out.Read(b)
			if n > 0 {
				select {
				case s.wake <- struct{}{}:
				default: // a wake-up is pending already
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { in.Close(); <-read; cc.Wait() })
	return s
}

// woken is the channel told of the pane's output (waitOn's wake).
func (s *tmuxSession) woken() <-chan struct{} { return s.wake }

func (s *tmuxSession) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command(s.tmux, append([]string{"-S", s.sock, "-f", s.conf}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// keys sends keys, one tmux argument each ("Enter", "Escape", "j").
func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	s.run(append([]string{"send-keys"}, keys...)...)
}

// text types literal text.
func (s *tmuxSession) text(text string) {
	s.t.Helper()
	s.run("send-keys", "-l", text)
}

func (s *tmuxSession) screen(escapes bool) string {
	s.t.Helper()
	if escapes {
		return s.run("capture-pane", "-p", "-e")
	}
	return s.run("capture-pane", "-p")
}

// wait looks at the screen, and again at each output of the pane, until ok
// says it is there (waitOn: no deadline but the test binary's; the screen
// is shown if it never comes).
func (s *tmuxSession) wait(what string, ok func(screen string) bool) string {
	s.t.Helper()
	var last string
	waitOn(s.t, what, func() bool { last = s.screen(false); return ok(last) }, s.woken,
		func() string { return "the screen is:\n" + last })
	return last
}

// waitText waits until every text is on the screen.
func (s *tmuxSession) waitText(texts ...string) string {
	s.t.Helper()
	return s.wait(fmt.Sprintf("%q", texts), func(sc string) bool {
		for _, t := range texts {
			if !strings.Contains(sc, t) {
				return false
			}
		}
		return true
	})
}

// exited waits for the program to end and returns its exit status, which
// the shell around it prints (tmux's own pane_dead_status is lost when the
// terminal closes before the process is reaped). The line may have
// scrolled into the history: the program leaves the cursor where it likes.
//
// It waits on the tmux channel the shell signals once it printed the
// status, not on the pane's output: the control client's notification of
// that last line was missed one run in three, and the wait then lasted
// until waitOn's minute went by.
func (s *tmuxSession) exited() string {
	s.t.Helper()
	ctx := context.Background()
	if end := nearTimeout(s.t); !end.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, end)
		defer cancel()
	}
	if out, err := exec.CommandContext(ctx, s.tmux, "-S", s.sock, "wait-for", "cpid-exit").CombinedOutput(); err != nil {
		s.t.Fatalf("the program never exited (tmux wait-for: %v %s); the screen and its history:\n%s", err, out,
			s.run("capture-pane", "-p", "-S", "-"))
	}
	sc := s.run("capture-pane", "-p", "-S", "-")
	_, st, ok := strings.Cut(sc, "cpid-exit=")
	if !ok {
		s.t.Fatalf("the shell signalled the exit but printed no status; the screen and its history:\n%s", sc)
	}
	return strings.TrimSpace(strings.SplitN(st, "\n", 2)[0])
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// sgr finds SGR escape sequences that set a color.
var sgr = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

func hasColor(screen string) bool {
	for _, m := range sgr.FindAllStringSubmatch(screen, -1) {
		for _, p := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ';' || r == ':' }) {
			n, _ := strconv.Atoi(p)
			if (n >= 30 && n <= 38) || (n >= 40 && n <= 48) || (n >= 90 && n <= 97) || (n >= 100 && n <= 107) {
				return true
			}
		}
	}
	return false
}

// TestBrowseTmux runs the real binary in tmux on the real fixture: open a
// change, switch to the timeline, filter, open the help, resize to 80x24,
// quit; then again with NO_COLOR.
func TestBrowseTmux(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil && os.Getenv("CI") == "" {
		t.Skip("tmux is not installed")
	}
	dir := t.TempDir()
	bin, err := builtBinary()
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "cpid.db")
	for _, args := range [][]string{{"ingest", "--db", db, basicBundle}, {"reconstruct", "--db", db}} {
		if code, _, stderr := runCmd(t, nil, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	browse := fmt.Sprintf("%s browse --db %s --refresh 500ms", bin, db)

	s := newTmux(t, "color", 100, 30, "env -u NO_COLOR TERM=xterm-256color "+browse)
	s.waitText("7 changes", "STARTED", "data to ")
	s.keys("j", "Enter")
	s.waitText("cpid › changes › patch Deployment default/web", "[1 DAG]", "merged by")
	s.keys("Tab")
	sc := s.waitText("[2 Timeline]", "on the critical path", "◆", "kube-scheduler")
	if !strings.Contains(sc, "checked") {
		t.Errorf("the status line does not say how fresh the data is:\n%s", sc)
	}
	if !hasColor(s.screen(true)) {
		t.Error("no color without NO_COLOR")
	}
	s.keys("/")
	s.text("kwok")
	s.waitText("/kwok")
	s.keys("Enter")
	sc = s.waitText("1 lane", "kwok")
	for _, l := range strings.Split(sc, "\n") {
		if strings.Contains(l, "│") && !strings.HasPrefix(l, " kwok ") && !strings.HasPrefix(l, " waits on the critical path") {
			t.Errorf("the filter kwok left another lane: %q", l)
		}
	}
	s.keys("?")
	s.waitText("Everywhere", "zoom in")
	s.keys("?")
	s.waitText("[2 Timeline]")
	s.run("resize-window", "-x", "80", "-y", "24")
	s.wait("an 80x24 layout", func(sc string) bool {
		lines := strings.Split(strings.TrimRight(sc, "\n"), "\n")
		return len(lines) == 24 && strings.HasSuffix(strings.TrimRight(lines[0], " "), "? help") &&
			utf8.RuneCountInString(strings.TrimRight(lines[0], " ")) <= 80 && strings.Contains(sc, "[2 Timeline]")
	})
	s.keys("Escape") // clears the filter
	s.waitText("7 lanes")
	s.keys("Escape") // back to the list
	s.waitText("7 changes")
	s.keys("q")
	if st := s.exited(); st != "0" {
		t.Errorf("exit status %s after q", st)
	}

	nc := newTmux(t, "nocolor", 80, 24, "env NO_COLOR=1 TERM=xterm-256color "+browse+" --change "+changeID(t, db))
	nc.waitText("[1 DAG]", "merged by")
	nc.keys("2")
	nc.waitText("[2 Timeline]", "◆")
	if esc := nc.screen(true); hasColor(esc) {
		t.Errorf("NO_COLOR: color sequences on screen:\n%q", esc)
	}
	nc.keys("q")
	if st := nc.exited(); st != "0" {
		t.Errorf("NO_COLOR: exit status %s", st)
	}
}

// changeID is the id of the fixture's rolling update.
func changeID(t *testing.T, db string) string {
	t.Helper()
	code, out, stderr := runCmd(t, nil, "query", "changes", "--db", db, "--output", "json")
	if code != 0 {
		t.Fatalf("query changes: %s", stderr)
	}
	var cs []cpid.ChangeRow
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Verb == "patch" && c.Kind == "Deployment" && c.Name == "web" && c.Subresource == "" {
			return c.ID
		}
	}
	t.Fatalf("no rolling update in\n%s", out)
	return ""
}
