package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/pyprobe"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/shim"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
	"github.com/ctxlab/ctxlab/internal/watch"
	"github.com/ctxlab/ctxlab/internal/wss"
)

// WatchOptions are the flags of `ctxlab watch` (and, for display, diagnose).
type WatchOptions struct {
	PID      int
	Name     string
	Interval time.Duration
	Count    int
	Top      int
	ByName   bool
	Sort     string
	Format   string // auto, table, json
	ProcRoot string // hidden: a fake /proc for tests
	// DB is the history to take this host's cost per switch from; Price
	// closes the output with what the switches seen cost.
	DB          string
	Price       bool
	noCalibrate bool
	// WSS is --wss, on or off: sample the working set (wss.go); the
	// refill curve it is priced with is curve, or why there is none.
	WSS       string
	wantCurve bool
	curve     *result.Run
	curveWhy  string
	Stdout    io.Writer
	Stderr    io.Writer
}

const (
	minInterval = 10 * time.Millisecond
	maxTop      = 1 << 20 // threads shown
	maxCount    = 1 << 30 // intervals
	maxInterval = time.Hour
)

func newWatchCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &WatchOptions{Stdout: stdout, Stderr: stderr}
	c := &cobra.Command{
		Use:   "watch [PID]",
		Short: "live per-thread switching profile of a running process, with a reading (no root needed)",
		Long: `watch samples a running process every interval and shows, per thread:
voluntary and involuntary context switches per second, CPU migrations per
second, CPU time, run-queue wait per second and per switch, the process
total, and the cgroup's CPU quota and throttling — then a reading of what
the figures suggest. On a terminal the table refreshes in place; otherwise
(or with --format json) it streams one JSON line per thread per interval.
Ctrl-C, --count or the process's exit ends it with a summary of the whole
watch, and the price of what it saw: switches per second × this host's
measured cost of a switch (the one the verdict and budget give: a thread
round trip on one CPU, its median ÷ the switches it measured, from the
newest of this host's stored runs with a quiet one, a noisy one only when
none is quiet, or a 2-second calibration when there is none; printed with
its arm, run and how) as a share of a core — never more
than the CPU the process used: a stored cost that would exceed it is
bounded by it, and the output says so — and the indirect cost at the
process's resident set size as a range from cachecost's per-switch curve
when a stored run has it. The switches of the watched processes' children
are counted apart, and named when the switching is in them.`,
		Example: `  ctxlab watch 1234
  ctxlab watch --name '^postgres$' --interval 2s --top 10
  ctxlab watch 1234 --by-name --sort runq --format json > profile.jsonl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(args); err != nil {
				return err
			}
			if err := o.checkDB(cmd.Context()); err != nil {
				return err
			}
			return runWatch(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Name, "name", "", "watch the processes whose command name matches this regular expression")
	f.DurationVar(&o.Interval, "interval", time.Second, "time between readings, "+durRange(minInterval, maxInterval))
	f.IntVar(&o.Count, "count", 0, "stop after this many intervals, "+intRange(0, maxCount)+" (0: until Ctrl-C or the process exits)")
	addDisplayFlags(c, o)
	f.StringVar(&o.ProcRoot, "proc-root", string(procstat.DefaultRoot), "proc filesystem to read (for tests)")
	_ = f.MarkHidden("proc-root")
	return c
}

// addDisplayFlags adds the flags watch and diagnose share.
func addDisplayFlags(c *cobra.Command, o *WatchOptions) {
	f := c.Flags()
	f.IntVar(&o.Top, "top", 20, "show the N threads that matter most, "+intRange(0, maxTop)+" (0: all)")
	f.BoolVar(&o.ByName, "by-name", false, "fold threads with the same name into one row")
	f.StringVar(&o.Sort, "sort", "switches", "order threads by: "+strings.Join(watch.SortKeys, ", "))
	f.StringVar(&o.Format, "format", "auto", "auto (table on a terminal, else json), table or json")
	f.BoolVar(&o.Price, "price", true, "close with the price: switches/s × this host's measured cost per switch (from the history, or a 2 s calibration)")
	f.StringVar(&o.DB, "db", "", "history to take the cost per switch from (default $XDG_DATA_HOME/ctxlab/history.db)")
	f.StringVar(&o.WSS, "wss", "on", "sample the working set (clear_refs and smaps_rollup every interval, at most 2% of the program's CPU) and price the indirect cost from it: on or off")
}

func (o *WatchOptions) validateDisplay() error {
	if o.Top < 0 || o.Top > maxTop {
		return outOfRange("--top", o.Top, intRange(0, maxTop)+" (0: all)")
	}
	if o.Sort != "switches" && o.Sort != "runq" {
		return usagef("--sort %q: must be one of %s", o.Sort, strings.Join(watch.SortKeys, ", "))
	}
	switch o.Format {
	case "auto", "table", "json":
	default:
		return usagef("--format %q: must be auto, table or json", o.Format)
	}
	if _, err := wss.Parse(o.WSS); err != nil {
		return usagef("%v", err)
	}
	return nil
}

func (o *WatchOptions) validate(args []string) error {
	if err := o.validateDisplay(); err != nil {
		return err
	}
	if o.Interval < minInterval || o.Interval > maxInterval {
		return outOfRange("--interval", o.Interval, durRange(minInterval, maxInterval))
	}
	if o.Count < 0 || o.Count > maxCount {
		return outOfRange("--count", o.Count, intRange(0, maxCount)+" (0: until stopped)")
	}
	switch {
	case len(args) == 1 && o.Name != "":
		return usagef("give a PID or --name, not both")
	case len(args) == 0 && o.Name == "":
		return usagef("give the PID to watch, or --name REGEX")
	case len(args) == 1:
		pid, err := strconv.Atoi(args[0])
		if err != nil || pid <= 0 {
			return usagef("PID %q: must be a positive integer", args[0])
		}
		o.PID = pid
	default:
		if _, err := regexp.Compile(o.Name); err != nil {
			return usagef("--name %q: not a regular expression: %v", o.Name, err)
		}
	}
	return nil
}

// checkDB refuses a --db given explicitly that cannot be read as a
// history (exit 2), instead of quietly pricing from a calibration.
func (o *WatchOptions) checkDB(ctx context.Context) error {
	if o.DB == "" {
		return nil
	}
	s, err := openStore(ctx, o.DB, false)
	if err != nil {
		return err
	}
	return s.Close()
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// display prints profiles as the options ask.
type display struct {
	o     *WatchOptions
	w     io.Writer
	json  bool
	tty   bool
	width int // the terminal's columns, which prose is wrapped at; 0: none
	title string
	n     int
	// more adds readings of the watched program's own (a CPython
	// process's, from /proc) after the switching readings.
	more func(watch.Profile) []watch.Reading
}

func newDisplay(o *WatchOptions, w io.Writer, title string) *display {
	tty := isTerminal(w)
	d := &display{o: o, w: w, title: title, tty: tty,
		json: o.Format == "json" || (o.Format == "auto" && !tty)}
	if !d.json {
		d.width = termWidth(w)
	}
	return d
}

// prose is where the display's sentences go (the price, diagnose's
// counters and notes): wrapped at the terminal's width, no word cut.
// Flush it when done.
func (d *display) prose() *textcol.LineWrapper { return textcol.NewLineWrapper(d.w, d.width) }

// shape folds, sorts and trims a profile for display; readings are taken
// before trimming so hidden threads still count.
func (d *display) shape(p watch.Profile) (watch.Profile, []watch.Reading, int) {
	if d.o.ByName {
		p = p.ByName()
	}
	readings := watch.Read(p, 3)
	if d.more != nil {
		readings = append(readings, d.more(p)...)
	}
	p.Sort(d.o.Sort)
	hidden := p.Top(d.o.Top)
	return p, readings, hidden
}

func (d *display) interval(p watch.Profile) error {
	q, readings, hidden := d.shape(p)
	d.n++
	if d.json {
		return watch.WriteJSON(d.w, q, "interval", readings)
	}
	if d.tty {
		fmt.Fprint(d.w, "\x1b[H\x1b[2J") // home, clear: refresh in place
	} else if d.n > 1 {
		fmt.Fprintln(d.w)
	}
	return watch.WriteTableWidth(d.w, fmt.Sprintf("%s, interval %d at %s", d.title, d.n, p.End.Format("15:04:05")), q, readings, hidden, d.width)
}

func (d *display) summary(p watch.Profile, title string) error {
	q, readings, hidden := d.shape(p)
	if d.json {
		return watch.WriteJSON(d.w, q, "summary", readings)
	}
	fmt.Fprintln(d.w)
	return watch.WriteTableWidth(d.w, title, q, readings, hidden, d.width)
}

// targets resolves the PID or --name into the PIDs to watch.
func (o *WatchOptions) targets(root procstat.Root) ([]int, string, error) {
	if o.PID > 0 {
		p, err := root.ReadProc(o.PID)
		if err != nil {
			if errors.Is(err, procstat.ErrNoProcess) {
				return nil, "", usagef("PID %d: no such process", o.PID)
			}
			return nil, "", fmt.Errorf("PID %d: cannot read it: %w", o.PID, err)
		}
		return []int{o.PID}, fmt.Sprintf("PID %d (%s)", o.PID, termsafe.String(p.Comm)), nil
	}
	re := regexp.MustCompile(o.Name)
	ps, err := root.FindByName(re, os.Getpid())
	if err != nil {
		return nil, "", fmt.Errorf("listing processes: %w", err)
	}
	if len(ps) == 0 {
		return nil, "", usagef("--name %q: no process has a matching command name", o.Name)
	}
	var pids []int
	var names []string
	for _, p := range ps {
		pids = append(pids, p.PID)
		names = append(names, fmt.Sprintf("%d", p.PID))
	}
	return pids, fmt.Sprintf("%q: PIDs %s", o.Name, strings.Join(names, ",")), nil
}

// watcher starts watching pids. Processes found by --name that exit
// before they are read (on a busy machine, between the listing and the
// first reading) are dropped, and watching goes on with the rest; a PID
// given by number that is gone is an error.
func (o *WatchOptions) watcher(root procstat.Root, pids []int) (*watch.Watcher, []int, error) {
	for {
		w, err := watch.NewWatcher(root, pids)
		if err == nil || o.PID > 0 || !errors.Is(err, procstat.ErrNoProcess) {
			return w, pids, err
		}
		var alive []int
		for _, pid := range pids {
			if _, perr := root.ReadProc(pid); !errors.Is(perr, procstat.ErrNoProcess) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			return nil, nil, usagef("--name %q: every matching process exited before it could be read", o.Name)
		}
		if len(alive) == len(pids) {
			return nil, nil, err
		}
		pids = alive
	}
}

func runWatch(ctx context.Context, o *WatchOptions) error {
	root := procstat.Root(o.ProcRoot)
	pids, what, err := o.targets(root)
	if err != nil {
		return err
	}
	if followShim(ctx, o, root) { // the program it exec'd: its name, its threads, its CPython reading
		if pids, what, err = o.targets(root); err != nil {
			return err
		}
	}
	w, pids, err := o.watcher(root, pids)
	if err != nil {
		if errors.Is(err, procstat.ErrNoProcess) {
			return usagef("%v", err)
		}
		return err
	}
	w.Children = true // a parent that hardly switches points at children that do
	d := newDisplay(o, o.Stdout, "ctxlab watch "+what)
	if py, ok := pyprobe.Identify(root, pids[0]); ok {
		d.more = func(p watch.Profile) []watch.Reading { return pyprobe.Inferred(p, py) }
	}
	rss := rssOf(root, pids)
	ws := wss.Start(root, pids[0], o.wssOn()) // the first PID's working set (wss.go)
	w.Begin()
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	end := ""
	for n := 0; o.Count == 0 || n < o.Count; n++ {
		stopped := false
		select {
		case <-ctx.Done():
			stopped = true
		case <-tick.C:
		}
		ws.Tick()
		p, err := w.Step()
		if r := rssOf(root, pids); r > 0 {
			rss = r
		}
		if p.Seconds > 0.001 && len(p.Threads) > 0 && !stopped {
			if derr := d.interval(p); derr != nil {
				return derr
			}
		}
		if errors.Is(err, watch.ErrGone) {
			end = w.GoneReason
			break
		}
		if stopped {
			end = "stopped"
			break
		}
	}
	if end != "" && end != "stopped" {
		fmt.Fprintf(o.Stderr, "ctxlab watch: %s; stopping\n", end)
	}
	if err := d.summary(w.Summary, fmt.Sprintf("summary of the whole watch of %s (%s to %s)", what,
		w.Summary.Start.Format("15:04:05"), w.Summary.End.Format("15:04:05"))); err != nil {
		return err
	}
	out := d.prose()
	if _, err := o.wssPrice(ctx, out, d.json, seenOf(w.Summary, rss), ws.Stop(), ""); err != nil {
		return err
	}
	return out.Flush()
}

// seenOf is what a whole watch saw, for the price: the watched processes'
// switches and CPU time (schedstat, when every thread had it) and their
// children's switches, apart.
func seenOf(sum watch.Profile, rss int64) price.Seen {
	t, c := sum.Total, sum.Children
	return price.Seen{Seconds: sum.Seconds, Vol: t.Vol, Invol: t.Invol, RSSBytes: rss,
		CPUNs: t.CPUNs, HasCPU: t.HasSchedstat && t.Threads > 0,
		ChildProcs: c.Procs, ChildVol: c.Total.Vol, ChildInvol: c.Total.Invol, BusiestChild: c.Busiest}
}

// followShim follows a PID that is in a shim (pyenv's python3: bash that
// execs the interpreter) to the program it execs, and says so on stderr;
// it reports whether it did.
func followShim(ctx context.Context, o *WatchOptions, root procstat.Root) bool {
	if o.PID <= 0 {
		return false
	}
	script, ok := shim.Running(root, o.PID)
	if !ok {
		return false
	}
	fmt.Fprintf(o.Stderr, "ctxlab watch: PID %d is running %s, a shim; following it to the program it execs (at most %s)\n",
		o.PID, termsafe.String(script), shim.Limit)
	f := shim.Follow(ctx, root, o.PID, termsafe.String(script), shim.Limit)
	fmt.Fprintf(o.Stderr, "ctxlab watch: %s\n", f.Note())
	return f.OK()
}
