package report

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestHTMLGolden pins the whole HTML report (verdict, tables, every chart
// with its colours, axes and legends) of each fixture run by its SHA-256
// in testdata/report.html.sha256: the reports are too large to keep
// beside it, and a digest is enough to prove that a change moved nothing.
// When it fails on purpose, write both reports to files and diff them
// before go test -update rewrites the digests. Charts are computed in
// floating point, which other architectures may round differently (fused
// multiply-add), so the digests are amd64's.
func TestHTMLGolden(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("the digests are of amd64's floating point, this is %s", runtime.GOARCH)
	}
	var b bytes.Buffer
	for _, name := range []string{"run.json", "quick.json", "quick2.json", "browser-run.json"} {
		var doc bytes.Buffer
		if err := HTML(&doc, loadRunFile(t, name)); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%x  %s\n", sha256.Sum256(doc.Bytes()), name)
		if dir := os.Getenv("CTXLAB_HTML_DUMP"); dir != "" { // to diff a change by hand
			if err := os.WriteFile(filepath.Join(dir, name+".html"), doc.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	golden(t, "report.html.sha256", b.Bytes())
}
