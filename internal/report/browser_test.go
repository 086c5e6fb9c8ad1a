package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/result"
)

// The report is checked in a real headless Chromium, the way a user opens
// it: every chart's text must lie inside its chart and overlap no other
// text, the embedded chart font must load, and the page must request
// nothing from the network (a Content-Security-Policy that allows only
// inline and data: resources reports any attempt, and the page's resource
// timing must list nothing but data: URLs). Chromium runs with its
// fonts restricted to DejaVu, as on a viewer without the Liberation fonts
// the charts are laid out with. The test skips, saying so, when chromium
// is not installed (.ci/run installs it). With CTXLAB_UPDATE_SCREENSHOT=1 it
// rewrites docs/report.png, the first screen of the report.

const screenshotEnv = "CTXLAB_UPDATE_SCREENSHOT"

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed: the report is not checked in a browser (.ci/run installs Debian's chromium)")
	return ""
}

// browserFixture is a real quick run of pingpong, ring and interference on
// a 2-vCPU VM: bars with long arm names, a parameter sweep and latency
// distributions.
func browserFixture(t *testing.T) *result.Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "browser-run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run result.Run
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	return &run
}

// probeScript runs in a copy of the report after load and the fonts, and
// writes what it found as JSON into #ctxlab-probe.
const probeScript = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; font-src data:; img-src data:; script-src 'unsafe-inline'">
<script>
var violations = [];
document.addEventListener('securitypolicyviolation', function (e) { violations.push(e.violatedDirective + ' ' + e.blockedURI); });
window.addEventListener('load', function () {
  document.fonts.ready.then(function () {
    var out = {violations: violations, problems: [], charts: 0, texts: 0, fonts: [], resources: []};
    performance.getEntriesByType('resource').forEach(function (e) { out.resources.push(e.name.slice(0, 80)); });
    document.fonts.forEach(function (f) { out.fonts.push(f.family.replace(/['"]/g, '') + ' ' + f.status); });
    document.querySelectorAll('figure.chart svg').forEach(function (svg) {
      out.charts++;
      var name = svg.closest('figure').getAttribute('data-name');
      var box = svg.getBoundingClientRect();
      var rs = [];
      svg.querySelectorAll('text').forEach(function (t) {
        out.texts++;
        var r = t.getBoundingClientRect();
        if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) {
          out.problems.push(name + ': "' + t.textContent + '" overflows its chart by ' +
            [box.left - r.left, r.right - box.right, box.top - r.top, r.bottom - box.bottom].map(function (v) { return v.toFixed(1); }).join('/') + ' px (left/right/top/bottom)');
        }
        rs.push({s: t.textContent, r: r});
      });
      for (var i = 0; i < rs.length; i++) {
        for (var j = i + 1; j < rs.length; j++) {
          var a = rs[i].r, b = rs[j].r;
          var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
          var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
          if (w > 1 && h > 2) {
            out.problems.push(name + ': "' + rs[i].s + '" overlaps "' + rs[j].s + '"');
          }
        }
      }
    });
    var pre = document.createElement('pre');
    pre.id = 'ctxlab-probe';
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  });
});
</script>
`

type probeResult struct {
	Violations []string `json:"violations"`
	Problems   []string `json:"problems"`
	Charts     int      `json:"charts"`
	Texts      int      `json:"texts"`
	Fonts      []string `json:"fonts"`
	Resources  []string `json:"resources"`
}

func TestReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	chromium := chromiumPath(t)
	dir := t.TempDir()
	var page bytes.Buffer
	if err := HTML(&page, browserFixture(t)); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report.html")
	probe := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(report, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	probed := strings.Replace(page.String(), "<head>", "<head>\n"+probeScript, 1)
	if err := os.WriteFile(probe, []byte(probed), 0o644); err != nil {
		t.Fatal(err)
	}
	env := restrictFonts(t, dir)

	dom, err := runChromium(t, chromium, env, dir, "--dump-dom", "--virtual-time-budget=15000", "file://"+probe)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<pre id="ctxlab-probe">(.*?)</pre>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe did not report (fonts never ready?); page tail: %q", tail(dom, 400))
	}
	var got probeResult
	if err := json.Unmarshal([]byte(htmlUnescape(string(m[1]))), &got); err != nil {
		t.Fatalf("probe output: %v: %s", err, m[1])
	}
	t.Logf("chromium: %d charts, %d texts, fonts %v", got.Charts, got.Texts, got.Fonts)
	if got.Charts < 4 || got.Texts < 50 {
		t.Errorf("only %d charts with %d texts measured", got.Charts, got.Texts)
	}
	for _, p := range got.Problems {
		t.Error(p)
	}
	for _, v := range got.Violations {
		t.Errorf("the page tried to load something: %s", v)
	}
	loaded := false
	for _, f := range got.Fonts {
		loaded = loaded || f == chartFamily+" loaded"
	}
	if !loaded {
		t.Errorf("the embedded chart font did not load: %v", got.Fonts)
	}
	for _, r := range got.Resources {
		if !strings.HasPrefix(r, "data:") {
			t.Errorf("the page fetched %s", r)
		}
	}

	shot := filepath.Join(dir, "report.png")
	if _, err := runChromium(t, chromium, env, dir, "--screenshot="+shot, "--window-size=1280,1600", "--hide-scrollbars", "file://"+report); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10000 {
		t.Fatalf("no screenshot: %v", err)
	}
	if os.Getenv(screenshotEnv) == "1" {
		b, _ := os.ReadFile(shot)
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "report.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("rewrote docs/report.png")
	}
}

// restrictFonts points fontconfig at DejaVu alone, where installed, so the
// charts must carry their own font to fit.
func restrictFonts(t *testing.T, dir string) []string {
	env := os.Environ()
	const dejavu = "/usr/share/fonts/truetype/dejavu"
	if _, err := os.Stat(dejavu); err != nil {
		t.Logf("no %s: chromium uses every installed font", dejavu)
		return env
	}
	conf := filepath.Join(dir, "fonts.conf")
	cache := filepath.Join(dir, "fontcache")
	xml := fmt.Sprintf(`<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd"><fontconfig><dir>%s</dir><cachedir>%s</cachedir><include ignore_missing="yes">/etc/fonts/conf.d</include></fontconfig>`, dejavu, cache)
	if err := os.WriteFile(conf, []byte(xml), 0o644); err != nil {
		t.Fatal(err)
	}
	return append(env, "FONTCONFIG_FILE="+conf)
}

// runChromium runs one headless chromium command in its own process group
// and kills that group (by its id) when it returns, so no renderer or
// zygote outlives the test.
func runChromium(t *testing.T, chromium string, env []string, dir string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--disable-dev-shm-usage", "--host-resolver-rules=MAP * ~NOTFOUND", "--user-data-dir=" + filepath.Join(dir, "profile")}
	cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err := cmd.Start()
	if err != nil {
		return nil, err
	}
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err := cmd.Wait(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("chromium %v: timed out; stderr %q", args, tail(errb.Bytes(), 600))
		}
		return nil, fmt.Errorf("chromium %v: %v; stderr %q", args, err, tail(errb.Bytes(), 600))
	}
	return out.Bytes(), nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&amp;", "&").Replace(s)
}
