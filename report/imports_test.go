package report

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
)

// TestNoTUI: the report shares what it shows with the command line and the
// terminal UI through the presenter package, not by importing the TUI.
func TestNoTUI(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sources: %v", err)
	}
	for _, f := range files {
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/cpid-dev/cpid/cmd/cpid-tui/tui" {
				t.Errorf("%s imports the TUI", f)
			}
		}
	}
}
