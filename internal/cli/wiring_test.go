package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestWiringIsExplicit keeps the CLI typed and explicit: production code
// never asks whether it runs under go test (testing.Testing), reads
// os.Args outside cmd/ctxlab/main.go (Main gets its arguments), and
// internal/cli has no init functions (main.go builds the command tree;
// options are typed fields, not hooks filling a map).
func TestWiringIsExplicit(t *testing.T) {
	root := filepath.Join("..", "..")
	initFunc := regexp.MustCompile(`(?m)^func init\(\)`)
	checked := 0
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			src := string(b)
			checked++
			if strings.Contains(src, "testing.Testing()") {
				t.Errorf("%s calls testing.Testing(): production code must not behave differently under go test; pass what differs as an option", rel)
			}
			if strings.Contains(src, "os.Args") && rel != "cmd/ctxlab/main.go" {
				t.Errorf("%s reads os.Args: only cmd/ctxlab/main.go does; pass the arguments in", rel)
			}
			if strings.HasPrefix(rel, "internal/cli/") && initFunc.MatchString(src) {
				t.Errorf("%s has an init function: main.go builds the command tree and each command defines its own typed flags", rel)
			}
			if strings.HasPrefix(rel, "internal/cli/") && strings.Contains(src, "map[string]any") {
				t.Errorf("%s holds options in a map[string]any: give them typed fields", rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d files checked: is the tree where the test expects it?", checked)
	}
}
