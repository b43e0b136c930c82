package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// bashCompletion is where the bash-completion package (Debian's, and
// Homebrew's bash-completion@2 under its prefix) keeps the library that
// cobra's bash script needs.
const bashCompletion = "/usr/share/bash-completion/bash_completion"

// TestBashCompletionTmux types TAB in a real interactive bash, in tmux,
// with bash-completion loaded and the script of `completion bash` sourced
// as the help says: history completes TYPE/ then NAME, query timeline a
// change id from $CPID_DB, and without a database TAB suggests nothing and
// prints nothing.
func TestBashCompletionTmux(t *testing.T) {
	t.Parallel()
	for _, need := range []string{"tmux", "bash"} {
		if _, err := exec.LookPath(need); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing (.ci/run installs it)", need)
			}
			t.Skipf("%s is not installed", need)
		}
	}
	if _, err := os.Stat(bashCompletion); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bash-completion is missing (.ci/run installs it): %v", err)
		}
		t.Skipf("bash-completion is not installed (apt-get install bash-completion): %v", err)
	}
	bin, err := builtBinary()
	if err != nil {
		t.Fatal(err)
	}
	db := figure5Reconstructed(t)
	ids := figureChanges(t, db)
	dir := t.TempDir()
	rc := filepath.Join(dir, "bashrc")
	if err := os.WriteFile(rc, []byte(`PS1='cpid$ '
source `+bashCompletion+`
source <(cpid-tui completion bash)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	// A wide pane, so that no line wraps; the shell starts in a directory
	// with no cpid.db and no files to complete instead.
	s := newTmux(t, "bash", 250, 30, "cd "+empty+" && env -u CPID_DB PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH")+
		" bash --noprofile --rcfile "+rc+" -i")
	s.waitText("cpid$")
	// command runs a command line and waits for the prompt after it on a
	// cleared screen. Keys typed while the shell runs a command are echoed
	// by the terminal itself (cooked mode) before readline reads them: an
	// echoed "query timeline 1a2b<TAB>X" ends with X before the TAB has
	// completed anything, and under load that echo matched the wait below.
	// Readline shows its prompt only once it reads the terminal raw, so
	// keys typed after the prompt are echoed by readline alone.
	command := func(line string) {
		s.keys("C-u")
		s.text(line + "; clear")
		s.keys("Enter")
		s.wait("the prompt after "+line, func(sc string) bool { return strings.TrimSpace(sc) == "cpid$" })
	}

	// Each TAB is done before the next key is read (readline reads the
	// terminal raw during a completion, nothing is echoed ahead of it):
	// what is on the line after the next key is what the completion left.
	s.text("cpid-tui --db " + db + " history dep")
	s.keys("Tab")
	s.text("w")
	s.keys("Tab")
	s.text("X")
	sc := s.waitText("X")
	if want := "history deployments/web X"; !strings.Contains(sc, want) {
		t.Errorf("history dep<TAB>w<TAB>: want %q on the line:\n%s", want, sc)
	}

	command("export CPID_DB=" + db)
	s.text("cpid-tui query timeline " + ids[2][:4])
	s.keys("Tab")
	s.text("X")
	sc = s.wait("the timeline line to end with X", func(sc string) bool {
		for _, l := range strings.Split(sc, "\n") {
			if l = strings.TrimSpace(l); strings.Contains(l, "query timeline "+ids[2][:4]) && strings.HasSuffix(l, "X") {
				return true
			}
		}
		return false
	})
	if want := "timeline " + ids[2] + " X"; !strings.Contains(sc, want) {
		t.Errorf("query timeline %s<TAB> from $CPID_DB: want %q on the line:\n%s", ids[2][:4], want, sc)
	}

	// No database: TAB twice lists nothing, prints no error.
	command("unset CPID_DB")
	s.text("cpid-tui history ")
	s.keys("Tab", "Tab")
	s.text("X")
	sc = s.waitText("history X")
	if lines := strings.Fields(strings.TrimSpace(sc)); len(strings.Split(strings.TrimSpace(sc), "\n")) != 1 || lines[len(lines)-1] != "X" {
		t.Errorf("history <TAB><TAB> without a database: want the line alone:\n%s", sc)
	}
	for _, bad := range []string{"command not found", "rror", "cpid-tui:"} {
		if strings.Contains(sc, bad) {
			t.Errorf("TAB printed %q:\n%s", bad, sc)
		}
	}
}
