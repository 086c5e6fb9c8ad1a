package report

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// VerdictMaxLines bounds the verdict: one terminal screen.
const VerdictMaxLines = 40

// VerdictRate is the handoff rate the verdict prices in CPU.
const VerdictRate = exp.VerdictRate

// Verdict writes the answer first: one screen that says, for this machine,
// what a handoff costs between each kind of worker and what the gap is made
// of, what one busy worker does to the tail, what a thread hop adds to a
// microsecond operation, the indirect cost of a cold cache, what handoffs
// cost in CPU, and which checks did not hold. Each figure comes with its
// spread and, where SPEC §8 has one, the published figure. It reads only
// the result model, so a stored run gives the same verdict; an answer
// whose arms were not measured says so.
func Verdict(w io.Writer, run *result.Run) error {
	for _, l := range VerdictLines(run, true) {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// VerdictLines is the verdict as lines (at most VerdictMaxLines). Its
// figures come from what the experiments declare (exp.Spec.Headline and
// exp.Spec.Verdict), laid out here in blocks. stored says whether the
// run is in the history, where `ctxlab show ID` and `report` find it. The
// host and CPU model are the machine's own text and a stored run's may be
// imported: escaped.
func VerdictLines(run *result.Run, stored bool) []string {
	return verdictLines(termsafe.Strings(run), exp.All(), stored)
}

func verdictLines(run *result.Run, specs []*exp.Spec, stored bool) []string {
	v := exp.NewVerdictRun(run)
	head := []string{
		fmt.Sprintf("ctxlab verdict · %s · %s, %d CPUs%s · Linux %s · run %s (%s)",
			orDash(run.Env.Hostname), orDash(run.Env.CPUModel), run.Env.LogicalCPUs, virt(run.Env), orDash(run.Env.Kernel), run.ID, run.Suite),
		"figures: median of the repetitions' means per op (min–max); † not pinned (goroutines: GOMAXPROCS = all); published: SPEC §8, elsewhere",
	}
	sections := blocks(v, specs)
	checks, counts := verdictChecks(run)
	noise := verdictNoise(run)
	foot := []string{"per-experiment tables: ctxlab run --detail, ctxlab show " + run.ID + ", ctxlab report -o report.html"}
	if !stored {
		foot = []string{"per-experiment tables: ctxlab run --detail; this run is not in the history, so show and report cannot find it (--format json -o FILE keeps it)"}
	}
	// Fit one screen: the checks list gives way first, the figures never.
	count := len(head) + len(noise) + len(foot)
	for _, s := range sections {
		count += len(s) + 1
	}
	count++ // blank line before the checks
	if room := VerdictMaxLines - count; len(checks) > room {
		if room < 2 {
			room = 2
		}
		more := 0 // checks, as the head counts them, not lines
		for _, k := range counts[room-1:] {
			more += k
		}
		checks = checks[:room-1]
		if more > 0 {
			checks = append(checks, fmt.Sprintf("  … %d more in the per-experiment tables (--detail)", more))
		}
	}
	out := head
	for _, s := range append(sections, checks) {
		out = append(out, "")
		out = append(out, s...)
	}
	out = append(out, noise...)
	out = append(out, foot...)
	if len(out) > VerdictMaxLines {
		out = out[:VerdictMaxLines]
	}
	return out
}

// blocks lays out what the experiments declare: the handoff table from
// their Headline rows, then each block's first heading, every
// experiment's lines and every experiment's foot lines, in experiment
// order. A block nothing writes to is left out.
func blocks(v *exp.VerdictRun, specs []*exp.Spec) [][]string {
	var rows []exp.Headline
	heading := make([]string, exp.NumBlocks)
	lines := make([][]string, exp.NumBlocks)
	feet := make([][]string, exp.NumBlocks)
	for _, s := range specs {
		rows = append(rows, s.Headline...)
		if s.Verdict == nil {
			continue
		}
		for _, sec := range s.Verdict(v) {
			if sec.Block < 0 || sec.Block >= exp.NumBlocks {
				continue
			}
			if heading[sec.Block] == "" {
				heading[sec.Block] = sec.Heading
			}
			lines[sec.Block] = append(lines[sec.Block], sec.Lines...)
			feet[sec.Block] = append(feet[sec.Block], sec.Foot...)
		}
	}
	var out [][]string
	for b := exp.Block(0); b < exp.NumBlocks; b++ {
		var blk []string
		if b == exp.BlockHandoff && len(rows) > 0 {
			blk = handoffTable(v, rows)
		} else if heading[b] != "" {
			blk = []string{heading[b]}
		}
		blk = append(append(blk, lines[b]...), feet[b]...)
		if len(blk) > 0 {
			out = append(out, blk)
		}
	}
	return out
}

// pinned says whether the arm's workers were placed by ctxlab.
func pinned(a result.Arm) bool { return a.Placement == "same-cpu" || a.Placement == "cross-cpu" }

// handoffTable is the experiments' Headline rows as a table: each kind of
// worker on one CPU and across CPUs, with the published figure; a * marks
// a mean that carries a slow tail, explained once under the table.
func handoffTable(v *exp.VerdictRun, rows []exp.Headline) []string {
	table := [][]string{{"handoff, one round trip", "one CPU", "across CPUs", "published"}}
	tailNote := ""
	for _, r := range rows {
		row := []string{"  " + r.Label, "not measured", "not measured", orDash(r.Published)}
		cell := func(a result.Arm) string {
			s := exp.Figure(a)
			if _, py, ok := strings.Cut(a.Name, "/py="); ok {
				s += " (py=" + py + ")" // --python all: say whose figure it is
			}
			if !pinned(a) && !strings.Contains(a.Name, "gomaxprocs=1") {
				s += " †"
			}
			if p := a.Percentiles; p != nil && p.Samples > 0 && p.P50 > 0 && a.Median/p.P50 > tailRatio {
				s += " *"
				if tailNote == "" { // explained once, on the first such arm
					tailNote = tailWhy(a)
				}
			}
			return s
		}
		one, ok1 := v.Pick(r.One...)
		if ok1 {
			row[1] = cell(one)
		}
		across, ok2 := v.Pick(r.Across...)
		if ok2 {
			row[2] = cell(across)
		}
		if r.PublishedP50 && (ok1 || ok2) {
			a := one
			if !ok1 {
				a = across
			}
			if a.Percentiles != nil && a.Percentiles.Samples > 0 {
				row[3] += "; here p50 " + result.FormatNs(a.Percentiles.P50)
			}
		}
		table = append(table, row)
	}
	var b strings.Builder
	textcol.Write(&b, table, "", nil)
	out := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if tailNote != "" {
		out = append(out, "  * "+tailNote)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// tailWhy explains a batch mean well above the sampled p50.
func tailWhy(a result.Arm) string {
	p := a.Percentiles
	return fmt.Sprintf("%s: the median is a mean per op and carries the slow tail (p99 %s, max %s); the sampled p50 is %s",
		exp.ShortName(a), result.FormatNs(p.P99), result.FormatNs(p.Max), result.FormatNs(p.P50))
}

// verdictChecks lists the checks that did not hold, each name once per
// experiment, under a head that counts them; counts[i] is how many failed
// checks line i stands for (0 for the head), so the head, the lines and a
// truncated list's "… N more" agree.
func verdictChecks(run *result.Run) (lines []string, counts []int) {
	var bad []string
	var badN []int
	total, failed := 0, 0
	for _, e := range run.Experiments {
		details := map[string][]string{} // a check evaluated on several arms is said once
		var names []string
		for _, c := range e.Checks {
			if c.Skipped {
				continue
			}
			total++
			if c.Holds {
				continue
			}
			failed++
			if details[c.Name] == nil {
				names = append(names, c.Name)
			}
			details[c.Name] = append(details[c.Name], c.Detail)
		}
		for _, n := range names {
			times := ""
			if k := len(details[n]); k > 1 {
				times = fmt.Sprintf(" (%d×)", k)
			}
			bad = append(bad, clip(fmt.Sprintf("  ✗ %s: %s%s — %s", e.Name, n, times, strings.Join(details[n], " | ")), 180))
			badN = append(badN, len(details[n]))
		}
	}
	if total == 0 {
		return []string{"checks: none evaluated"}, []int{0}
	}
	head := fmt.Sprintf("checks that did not hold on this machine: %d of %d", failed, total)
	if len(bad) != failed {
		// The count is of checks; a line is a check's name, said once.
		lines := "lines"
		if len(bad) == 1 {
			lines = "line"
		}
		head += fmt.Sprintf(", in %d %s: (k×) is one check that failed k times", len(bad), lines)
	}
	return append([]string{head}, bad...), append([]int{0}, badN...)
}

// clip shortens s to n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// noise says once how many arms are noisy and why: each kind of reason
// once, with one arm's wording and how many arms gave it.
func verdictNoise(run *result.Run) []string {
	kinds, order, noisy := noiseReasons(run.Arms)
	if noisy == 0 {
		return []string{"noise: no arm is noisy"}
	}
	var parts []string
	for _, k := range order {
		rk := kinds[k]
		if rk.varied {
			parts = append(parts, fmt.Sprintf("%s (%d arms, figures vary)", rk.example, rk.arms))
		} else {
			parts = append(parts, fmt.Sprintf("%s (%d arms)", rk.example, rk.arms))
		}
	}
	return []string{clip(fmt.Sprintf("noise: %d of %d arms noisy — %s", noisy, len(run.Arms), strings.Join(parts, "; ")), 240)}
}

type reasonKind struct {
	example string
	arms    int
	varied  bool // the arms' figures differ: example is one of them
}

// noiseReasons counts the arms per kind of noise reason; reasons that
// differ only in their figures ("repetitions spread 2.15x …") are one kind.
func noiseReasons(arms []result.Arm) (kinds map[string]*reasonKind, order []string, noisy int) {
	kinds = map[string]*reasonKind{}
	for _, a := range arms {
		if !a.Noise.Noisy {
			continue
		}
		noisy++
		for _, r := range a.Noise.Reasons {
			k := figures.ReplaceAllString(r, "#")
			if kinds[k] == nil {
				kinds[k] = &reasonKind{example: r}
				order = append(order, k)
			}
			kinds[k].arms++
			kinds[k].varied = kinds[k].varied || r != kinds[k].example
		}
	}
	return kinds, order, noisy
}

// figures matches the numbers (and their units) in a reason.
var figures = regexp.MustCompile(`[0-9][0-9.,]*\s*(µs|ms|ns|s|x|%)?`)
