package mech

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/measure"
)

// sectionKinds are the thread kinds whose loops run in system-call
// sections: every row on threads that waits in the kernel or spins.
func sectionKinds() []string {
	var out []string
	for _, r := range On(SubThread) {
		if r.Wait != WaitGo {
			out = append(out, r.Name)
		}
	}
	return out
}

// TestSectionsSurviveStopTheWorld: round trips in system-call sections
// (locked threads, as the thread arms run them, every third op sampled)
// while another goroutine stops the world as fast as it can (runtime.GC,
// ReadMemStats, FreeOSMemory), at GOMAXPROCS 1 and 2. Every kind must
// finish, and a stop-the-world must have happened meanwhile. The same loops
// raw, without the section, hang here (tried: a stop-the-world waits for a
// reader whose writer it has stopped); the whole process stops then, so go
// test's -timeout reports it.
func TestSectionsSurviveStopTheWorld(t *testing.T) {
	for _, procs := range []int{1, 2} {
		for _, kind := range sectionKinds() {
			t.Run(fmt.Sprintf("%s/gomaxprocs=%d", kind, procs), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				p, err := NewPair(kind)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				a, err := StartThread(nil)
				if err != nil {
					t.Fatal(err)
				}
				defer a.Stop()
				b, err := StartThread(nil)
				if err != nil {
					t.Fatal(err)
				}
				defer b.Stop()
				echoErr := make(chan error, 1)
				if _, err := b.Go(func() { echoErr <- Echo(p.B) }); err != nil {
					t.Fatal(err)
				}
				defer p.Stop() // deferred last, so it runs first: the echo ends before b.Stop waits for it

				var stws atomic.Int64
				quit := make(chan struct{})
				storm := make(chan struct{})
				go func() {
					defer close(storm)
					var ms runtime.MemStats
					for {
						select {
						case <-quit:
							return
						default:
						}
						runtime.GC()
						runtime.ReadMemStats(&ms)
						debug.FreeOSMemory()
						stws.Add(3)
					}
				}()
				stopStorm := sync.OnceFunc(func() { close(quit); <-storm })
				defer stopStorm() // a failing test must not leave it stopping the world
				// Batches of 500 until 20 are done and the storm has
				// stopped the world at least 6 times (a loaded machine
				// can be slow to start it), 2 000 batches at most.
				const minReps, maxReps, ops = 20, 2000, 500
				s := measure.NewSampler(maxReps*ops, maxReps*ops, 3)
				reps := 0
				ran := make(chan error, 1)
				go func() {
					var err error
					if derr := a.Do(func() {
						for ; err == nil && reps < maxReps && (reps < minReps || stws.Load() < 6); reps++ {
							err = RoundTrips(p.A, ops, s)
						}
					}); derr != nil {
						err = derr
					}
					ran <- err
				}()
				select {
				case err := <-ran:
					if err != nil {
						t.Fatal(err)
					}
				case err := <-echoErr:
					t.Fatalf("the echo ended first: %v", err)
				case <-time.After(60 * time.Second):
					t.Fatal("round trips in sections did not finish under stop-the-world storms")
				}
				during := stws.Load()
				stopStorm()
				if during == 0 {
					t.Fatalf("no stop-the-world ran during %d batches of round trips", reps)
				}
				if want := (reps*ops + 2) / 3; s.Len() != want {
					t.Fatalf("%d samples of %d ops sampled every 3rd, want %d", s.Len(), reps*ops, want)
				}
			})
		}
	}
}

// TestStopEndsRoundTripsInASection: a RoundTrips blocked inside a section
// with no partner to answer (a hung arm at the runner's timeout) returns
// ErrStopped once the pair is stopped, sampled or not.
func TestStopEndsRoundTripsInASection(t *testing.T) {
	for _, kind := range sectionKinds() {
		for _, sampled := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sampled=%v", kind, sampled), func(t *testing.T) {
				p, err := NewPair(kind)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				var s *measure.Sampler
				if sampled {
					s = measure.NewSampler(1000, 1000, 1)
				}
				ran := make(chan error, 1)
				go func() { ran <- RoundTrips(p.A, 1000, s) }() // nobody echoes
				time.Sleep(20 * time.Millisecond)
				p.Stop()
				select {
				case err := <-ran:
					if !errors.Is(err, ErrStopped) {
						t.Fatalf("RoundTrips returned %v, want ErrStopped", err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("Stop did not end a RoundTrips blocked in a section")
				}
			})
		}
	}
}

// sectionCalls are what code in a section may call besides itself: the
// runtime's section calls and clock, and x/sys's raw system calls, all
// //go:nosplit.
var sectionCalls = []string{"runtime.entersyscall", "runtime.exitsyscall", "runtime.nanotime",
	"golang.org/x/sys/unix.RawSyscall", "golang.org/x/sys/unix.RawSyscall6"}

// sectionCode are the functions that run between entersyscall and
// exitsyscall: every function of this package marked //go:nosplit, read
// from its files, so that a mechanism's own section file is held here
// without a list to edit.
func sectionCode(t *testing.T) []string {
	_, self, _, _ := runtime.Caller(0)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(self), "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Doc != nil &&
				slices.ContainsFunc(fd.Doc.List, func(c *ast.Comment) bool { return c.Text == "//go:nosplit" }) {
				out = append(out, fd.Name.Name)
			}
		}
	}
	// The pipe's and the futex's are among them, or the reading is broken.
	for _, f := range []string{"fdTrips", "fdEcho", "futexTrips", "futexEcho", "le64"} {
		if !slices.Contains(out, f) {
			t.Fatalf("sectionCode read %v: no %s", out, f)
		}
	}
	return out
}

// TestSectionCodeIsNosplit reads the compiler's assembly for this package
// (go build -gcflags=-S, replayed from the build cache when it is there):
// every function that runs inside a section must be nosplit (a stack check
// there throws without a P) and call nothing but sectionCode and
// sectionCalls — no allocation, no panic path, nothing that checks its stack.
func TestSectionCodeIsNosplit(t *testing.T) {
	if !sections {
		t.Skip("a race build has no system-call sections (section_race.go)")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to compile with")
	}
	const pkg = "github.com/ctxlab/ctxlab/internal/mech."
	cmd := exec.Command(goTool, "build", "-gcflags=-S", ".")
	_, self, _, _ := runtime.Caller(0)
	cmd.Dir = filepath.Dir(self) // this package, from wherever the test binary runs
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-S: %v\n%s", err, out)
	}
	allowed, inSection := map[string]bool{}, map[string]bool{}
	for _, c := range sectionCalls {
		allowed[c] = true
	}
	code := sectionCode(t)
	for _, f := range code {
		allowed[pkg+f], inSection[pkg+f] = true, true
	}
	seen := map[string]bool{}
	fn := ""
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[1] == "STEXT" { // a function's header
			fn = ""
			if inSection[fields[0]] {
				fn = fields[0]
				seen[fn] = true
				if !strings.Contains(line, " nosplit ") {
					t.Errorf("%s is not //go:nosplit: %s", fn, line)
				}
			}
			continue
		}
		if fn == "" {
			continue
		}
		for i, f := range fields {
			if f != "CALL" && f != "JMP" || i+1 >= len(fields) {
				continue
			}
			target := fields[i+1]
			switch {
			case strings.HasSuffix(target, "(SB)"):
				if callee := strings.TrimSuffix(target, "(SB)"); !allowed[callee] {
					t.Errorf("%s calls %s inside a system-call section: only nosplit code that does not allocate may run there (%s)", fn, callee, strings.TrimSpace(line))
				}
			case f == "CALL": // through a register or memory: a function value or method we cannot vet
				t.Errorf("%s makes an indirect call inside a system-call section (%s)", fn, strings.TrimSpace(line))
			}
		}
	}
	for _, f := range code {
		if !seen[pkg+f] {
			t.Errorf("%s is not in the compiler's output (renamed? list it here as it is)", f)
		}
	}
}
