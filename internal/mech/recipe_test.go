package mech

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// recipeFiles are the steps of docs/layout.md's "How to add a mechanism",
// one file each, in order: what adding a mechanism touches, and nothing
// more (pingpong's arms, checks and findings and mech's tests take it
// from its row). <name> is the mechanism's.
var recipeFiles = []string{
	"internal/mech/<name>_linux.go",
	"internal/mech/<name>_section_linux.go",
	"docs/mechanisms.md",
}

// recipeExamples are mechanisms added by the recipe alone (issue 49): the
// files its steps name exist for each.
var recipeExamples = []string{"mq", "spin"}

var (
	stepLine = regexp.MustCompile("^[0-9]+\\. `([^`]+)`")
	heading  = regexp.MustCompile("(?m)^## `([^`]+)`")
)

// TestAddAMechanismRecipe holds docs/layout.md's recipe to recipeFiles:
// each numbered step names one file, in the order above, and the files
// exist for the mechanisms added by it.
func TestAddAMechanismRecipe(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## How to add a mechanism")
	if !ok {
		t.Fatal(`docs/layout.md has no "## How to add a mechanism"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var steps []string
	for _, line := range strings.Split(section, "\n") {
		if m := stepLine.FindStringSubmatch(line); m != nil {
			steps = append(steps, m[1])
		}
	}
	if !slices.Equal(steps, recipeFiles) {
		t.Errorf("the recipe's steps name %v, want %v (recipe_test.go's recipeFiles)", steps, recipeFiles)
	}
	for _, name := range recipeExamples {
		if _, ok := RowOf(name); !ok {
			t.Errorf("%s: no row", name)
		}
		for _, f := range recipeFiles {
			path := filepath.Join(root, filepath.FromSlash(strings.ReplaceAll(f, "<name>", name)))
			if _, err := os.Stat(path); err != nil {
				t.Errorf("recipe step %s for %s: %v", f, name, err)
			}
		}
	}
}

// TestEveryMechanismIsDocumented: docs/mechanisms.md has a "## `name`"
// section for every row, in the rows' order, and none for a mechanism
// that is not registered.
func TestEveryMechanismIsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "mechanisms.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented, registered []string
	for _, m := range heading.FindAllStringSubmatch(string(b), -1) {
		documented = append(documented, m[1])
	}
	for _, r := range Rows() {
		registered = append(registered, r.Name)
	}
	if !slices.Equal(documented, registered) {
		t.Errorf("docs/mechanisms.md documents %v, the rows are %v", documented, registered)
	}
}
