package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/result"
)

// The report is checked in a real headless Chromium, the way a user opens
// it, in a 1280 px window and in a 390 px one (a phone): every chart's
// text must lie inside its chart, overlap no other text and read at least
// MinTextPx (the legend 11 px), the embedded chart font must load, and the
// page must request nothing from the network (a Content-Security-Policy
// that allows only inline and data: resources reports any attempt, and the
// page's resource timing must list nothing but data: URLs). At 1280 px no
// table, chart or verdict is wider than its column; at 390 px the page
// itself never scrolls sideways: what is wider scrolls inside its own
// container, never clipped, and only tables do: the verdict and the charts
// are laid out for the phone's width. Chromium runs with its fonts restricted to
// DejaVu, as on a viewer without the Liberation fonts the charts are laid
// out with. The test skips, saying so, when chromium is not installed
// (.ci/run installs it). With CTXLAB_UPDATE_SCREENSHOT=1 it rewrites
// docs/report.png and docs/report-390.png, the first screen of the report
// at each width.

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
var probeScript = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; font-src data:; img-src data:; script-src 'unsafe-inline'">
<script>
var violations = [];
document.addEventListener('securitypolicyviolation', function (e) { violations.push(e.violatedDirective + ' ' + e.blockedURI); });
window.addEventListener('load', function () {
  document.fonts.ready.then(function () {
    var out = {violations: violations, problems: [], charts: 0, texts: 0, fonts: [], resources: [],
      width: window.innerWidth, pageOverflow: document.documentElement.scrollWidth - window.innerWidth,
      boxes: [], minFont: 1e9, minFontText: '', minLegend: 1e9, wrapped: []};
    // A figure's cell on more than one line ("344 / ns–376 / ns").
    document.querySelectorAll('td.n').forEach(function (td) {
      var r = document.createRange();
      r.selectNodeContents(td);
      var tops = {};
      Array.prototype.forEach.call(r.getClientRects(), function (x) { tops[Math.round(x.top)] = true; });
      if (Object.keys(tops).length > 1) { out.wrapped.push(td.textContent); }
    });
    // Every table, chart and the verdict: its width, and the box that
    // scrolls it sideways (its nearest ancestor with overflow-x auto or
    // scroll), if any.
    var shown = function (el) { return el.getClientRects().length > 0; }; // the wide or the narrow one
    document.querySelectorAll('table, figure.chart svg, pre.verdict').forEach(function (el) {
      if (!shown(el)) { return; }
      var sc = el.parentElement;
      while (sc && ['auto', 'scroll'].indexOf(getComputedStyle(sc).overflowX) < 0) { sc = sc.parentElement; }
      var col = (sc || el).parentElement;
      out.boxes.push({what: el.tagName.toLowerCase() + (el.className && el.className.baseVal === undefined ? '.' + el.className : '') +
          (el.closest('[data-name]') ? ' ' + el.closest('[data-name]').getAttribute('data-name') : ''),
        width: el.getBoundingClientRect().width, scrolled: !!sc,
        boxWidth: sc ? sc.clientWidth : 0, boxScroll: sc ? sc.scrollWidth : 0,
        boxRight: sc ? sc.getBoundingClientRect().right : 0});
    });
    performance.getEntriesByType('resource').forEach(function (e) { out.resources.push(e.name.slice(0, 80)); });
    document.fonts.forEach(function (f) { out.fonts.push(f.family.replace(/['"]/g, '') + ' ' + f.status); });
    document.querySelectorAll('figure.chart svg').forEach(function (svg) {
      if (!shown(svg)) { return; }
      out.charts++;
      var name = svg.closest('figure').getAttribute('data-name');
      var box = svg.getBoundingClientRect();
      var rs = [];
      svg.querySelectorAll('text').forEach(function (t) {
        out.texts++;
        var m = t.getScreenCTM();
        var user = parseFloat(getComputedStyle(t).fontSize);
        var px = user * Math.hypot(m.a, m.b);
        if (px < out.minFont) { out.minFont = px; out.minFontText = name + ': "' + t.textContent + '"'; }
        if (user === ` + legendPx + ` && px < out.minLegend) { out.minLegend = px; }
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
    if (window.parent !== window) { window.parent.postMessage(JSON.stringify(out), '*'); return; }
    var pre = document.createElement('pre');
    pre.id = 'ctxlab-probe';
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  });
});
</script>
`

// legendPx is the legend's font size in an SVG's user units, as the
// probe finds it in the text's style.
var legendPx = strconv.FormatFloat(float64(legendSize), 'f', -1, 64)

type probeResult struct {
	Violations   []string   `json:"violations"`
	Problems     []string   `json:"problems"`
	Charts       int        `json:"charts"`
	Texts        int        `json:"texts"`
	Fonts        []string   `json:"fonts"`
	Resources    []string   `json:"resources"`
	Width        int        `json:"width"`
	PageOverflow float64    `json:"pageOverflow"`
	Boxes        []probeBox `json:"boxes"`
	MinFont      float64    `json:"minFont"`
	MinFontText  string     `json:"minFontText"`
	MinLegend    float64    `json:"minLegend"`
	Wrapped      []string   `json:"wrapped"`
}

// probeBox is a table, a chart or the verdict, and the box that scrolls it.
type probeBox struct {
	What      string  `json:"what"`
	Width     float64 `json:"width"`
	Scrolled  bool    `json:"scrolled"`
	BoxWidth  float64 `json:"boxWidth"`
	BoxScroll float64 `json:"boxScroll"`
	BoxRight  float64 `json:"boxRight"`
}

// screenshots are the widths the report is opened at and the file in docs/
// that shows each one's first screen.
var screenshots = []struct {
	width int
	doc   string
}{{1280, "report.png"}, {390, "report-390.png"}}

// minWindow is the narrowest window headless Chromium lays a page out in
// (a narrower --window-size is laid out at this width and cropped), so a
// phone's width is given to an iframe inside it.
const minWindow = 500

// framed is a page that shows report in an iframe width px wide, as a
// window of that width would, and copies what a probe in it posts into
// #ctxlab-probe.
func framed(report string, width int) string {
	return fmt.Sprintf(`<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">
<iframe style="display:block;border:0;width:%dpx;height:1600px" srcdoc="%s"></iframe>
<script>
window.addEventListener('message', function (e) {
  var pre = document.createElement('pre');
  pre.id = 'ctxlab-probe';
  pre.textContent = e.data;
  document.body.appendChild(pre);
});
</script></body></html>`, width, html.EscapeString(report))
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
	withProbe := strings.Replace(page.String(), "<head>", "<head>\n"+probeScript, 1)
	env := restrictFonts(t, dir)
	for _, sc := range screenshots {
		t.Run(fmt.Sprintf("%dpx", sc.width), func(t *testing.T) {
			window := fmt.Sprintf("--window-size=%d,1600", max(sc.width, minWindow))
			probed := filepath.Join(dir, fmt.Sprintf("probe-%d.html", sc.width))
			if err := os.WriteFile(probed, []byte(framed(withProbe, sc.width)), 0o644); err != nil {
				t.Fatal(err)
			}
			dom, err := runChromium(t, chromium, env, dir, "--dump-dom", "--virtual-time-budget=15000", window, "file://"+probed)
			if err != nil {
				t.Fatal(err)
			}
			checkProbe(t, readProbe(t, dom), sc.width)

			shown := filepath.Join(dir, fmt.Sprintf("report-%d.html", sc.width))
			if err := os.WriteFile(shown, []byte(framed(page.String(), sc.width)), 0o644); err != nil {
				t.Fatal(err)
			}
			shot := filepath.Join(dir, sc.doc)
			if _, err := runChromium(t, chromium, env, dir, "--screenshot="+shot, window, "--hide-scrollbars", "file://"+shown); err != nil {
				t.Fatal(err)
			}
			b := cropWidth(t, shot, sc.width)
			if len(b) < 10000 {
				t.Fatalf("no screenshot: %d bytes", len(b))
			}
			if os.Getenv(screenshotEnv) == "1" {
				if err := os.WriteFile(filepath.Join("..", "..", "docs", sc.doc), b, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("rewrote docs/%s", sc.doc)
			}
		})
	}
}

// readProbe finds what the probe reported in a dumped DOM.
func readProbe(t *testing.T, dom []byte) probeResult {
	t.Helper()
	m := regexp.MustCompile(`(?s)<pre id="ctxlab-probe">(.*?)</pre>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe did not report (fonts never ready?); page tail: %q", tail(dom, 400))
	}
	var got probeResult
	if err := json.Unmarshal([]byte(htmlUnescape(string(m[1]))), &got); err != nil {
		t.Fatalf("probe output: %v: %s", err, m[1])
	}
	return got
}

// cropWidth reads a PNG screenshot and returns it cut to width px, the
// framed report's own width.
func cropWidth(t *testing.T, path string, width int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	im, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	r := im.Bounds()
	r.Max.X = min(r.Max.X, r.Min.X+width)
	sub, ok := im.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		t.Fatalf("screenshot: a %T cannot be cropped", im)
	}
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&b, sub.SubImage(r)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// checkProbe holds what the probe found to the rules above for a window
// width px wide.
func checkProbe(t *testing.T, got probeResult, width int) {
	t.Helper()
	t.Logf("chromium at %d px: %d charts, %d texts, smallest %.1f px (%s), legend %.1f px, fonts %v",
		got.Width, got.Charts, got.Texts, got.MinFont, got.MinFontText, got.MinLegend, got.Fonts)
	if got.Width != width {
		t.Fatalf("the window is %d px wide, not %d: the layout was not checked", got.Width, width)
	}
	if got.Charts < 4 || got.Texts < 50 {
		t.Errorf("only %d charts with %d texts measured", got.Charts, got.Texts)
	}
	for _, p := range got.Problems {
		t.Error(p)
	}
	if got.MinFont < MinTextPx-0.01 { // float rounding in the layout
		t.Errorf("chart text %s reads %.1f px, below %d px", got.MinFontText, got.MinFont, MinTextPx)
	}
	if got.MinLegend < 11 {
		t.Errorf("legend text reads %.1f px, below 11 px", got.MinLegend)
	}
	if got.PageOverflow > 0.5 {
		t.Errorf("the page is %.0f px wider than the %d px window: something is cut off or scrolls the whole page", got.PageOverflow, width)
	}
	for _, w := range got.Wrapped {
		t.Errorf("the figure %q wraps onto two lines", w)
	}
	var tables, scrolling int
	for _, b := range got.Boxes {
		if strings.HasPrefix(b.What, "table") {
			tables++
		}
		if !b.Scrolled {
			t.Errorf("%s is in no box that scrolls sideways", b.What)
			continue
		}
		if b.BoxRight > float64(width)+0.5 {
			t.Errorf("%s: its box ends at %.0f px, past the %d px window", b.What, b.BoxRight, width)
		}
		if b.BoxScroll > b.BoxWidth+0.5 {
			scrolling++
			if width >= 1280 || !strings.HasPrefix(b.What, "table") { // on a phone only wide tables scroll (issue 50)
				t.Errorf("%s is %.0f px wide in a %.0f px column at %d px: it scrolls sideways", b.What, b.BoxScroll, b.BoxWidth, width)
			}
		}
	}
	if tables < 3 {
		t.Errorf("only %d tables measured", tables)
	}
	if width < 500 && scrolling == 0 {
		t.Errorf("at %d px nothing scrolls sideways, not even the tables of arms: the check measured nothing", width)
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

// runChromium runs one headless chromium command, again when the browser
// crashed (it died of a signal it was not sent: a segmentation fault once
// under four CPU hogs, the page the same), at most crashTries times.
func runChromium(t *testing.T, chromium string, env []string, dir string, args ...string) ([]byte, error) {
	t.Helper()
	for try := 1; ; try++ {
		out, crashed, err := runChromiumOnce(chromium, env, dir, args...)
		if !crashed || try == crashTries {
			return out, err
		}
		t.Logf("chromium crashed (try %d of %d), again: %v", try, crashTries, err)
	}
}

// crashTries is how many times a crashing chromium is run.
const crashTries = 3

// runChromiumOnce runs one headless chromium command in its own process
// group and kills that group (by its id) when it returns, so no renderer
// or zygote outlives the test; crashed says the browser died of a signal
// that the test did not send.
func runChromiumOnce(chromium string, env []string, dir string, args ...string) (out []byte, crashed bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--disable-dev-shm-usage", "--host-resolver-rules=MAP * ~NOTFOUND", "--user-data-dir=" + filepath.Join(dir, "profile")}
	cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stdout, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &errb
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		return nil, false, err
	}
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err := cmd.Wait(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, false, fmt.Errorf("chromium %v: timed out; stderr %q", args, tail(errb.Bytes(), 600))
		}
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		crashed := ok && ws.Signaled() && ws.Signal() != syscall.SIGKILL
		return nil, crashed, fmt.Errorf("chromium %v: %v; stderr %q", args, err, tail(errb.Bytes(), 600))
	}
	return stdout.Bytes(), false, nil
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

// A browser that dies of a signal of its own is run again, at most
// crashTries times; one that fails otherwise is not.
func TestRunChromiumRetriesACrash(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []struct {
		script       string
		tries        int
		wantCrashErr bool
	}{
		{"echo x >>" + filepath.Join(dir, "n-crash") + "; kill -SEGV $$", crashTries, true},
		{"echo x >>" + filepath.Join(dir, "n-fail") + "; exit 3", 1, false},
	} {
		fake := filepath.Join(dir, "fake")
		if err := os.WriteFile(fake, []byte("#!/bin/sh\n"+k.script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := runChromium(t, fake, os.Environ(), dir, "--dump-dom")
		if err == nil || strings.Contains(err.Error(), "signal: segmentation fault") != k.wantCrashErr {
			t.Errorf("%q: err %v", k.script, err)
		}
		n := filepath.Join(dir, "n-crash")
		if !k.wantCrashErr {
			n = filepath.Join(dir, "n-fail")
		}
		b, _ := os.ReadFile(n)
		if got := strings.Count(string(b), "x"); got != k.tries {
			t.Errorf("%q ran %d times, want %d", k.script, got, k.tries)
		}
	}
}
