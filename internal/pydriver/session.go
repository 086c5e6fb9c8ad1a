package pydriver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
)

// Protocol is the driver protocol version this ctxlab speaks.
const Protocol = 1

// Hello is the driver's first line: who is measuring.
type Hello struct {
	Protocol       int     `json:"protocol"`
	Implementation string  `json:"implementation"`
	Version        string  `json:"version"`
	FullVersion    string  `json:"full_version"`
	Executable     string  `json:"executable"`
	FreeThreaded   bool    `json:"free_threaded"`
	GILEnabled     bool    `json:"gil_enabled"`
	SwitchInterval float64 `json:"switch_interval_s"`
	ClockNs        float64 `json:"clock_ns"`
	RusageThread   bool    `json:"rusage_thread"`
	Affinity       bool    `json:"affinity"`
}

// Request opens one arm on the driver: the bench, its params, and where
// its threads run. The driver sets the bench up, then runs what it is
// told (Message): the runner's sizing batches, then its timed repetitions.
type Request struct {
	Bench  string            `json:"bench"`
	Params map[string]string `json:"params,omitempty"`
	CPUs   []int             `json:"cpus,omitempty"`   // the interpreter's CPU set for the arm
	CPUsA  []int             `json:"cpus_a,omitempty"` // the measuring (main) thread
	CPUsB  []int             `json:"cpus_b,omitempty"` // partner threads
	// MinOps is the fewest ops a timed repetition of the arm runs: the
	// runner's sizing applies it (exp.SelfTiming); it is not sent.
	MinOps int `json:"-"`
}

// Timed asks for an arm's timed repetitions: Reps of Ops ops each, every
// Every-th unit (a ring's lap) timed on its own (0: none), the op's cost
// from sizing being PerOpNs (for the driver's note on what its timestamps
// add). The arm is closed after them.
type Timed struct {
	Reps    int     `json:"reps"`
	Ops     int     `json:"ops"`
	Every   int     `json:"every"`
	PerOpNs float64 `json:"per_op_ns"`
}

// The messages to the driver (Message.Do): open an arm (Request), run a
// batch of N ops (untimed by the runner, unsampled), run the timed
// repetitions (Timed), close the open arm without measuring it.
// TestDriverProtocol holds driver.py's handle() to this list.
const (
	DoOpen  = "open"
	DoBatch = "batch"
	DoTimed = "timed"
	DoClose = "close"
)

// doMessages is every Do the driver is sent.
var doMessages = []string{DoOpen, DoBatch, DoTimed, DoClose}

// Message is one line to the driver: Do is one of doMessages.
type Message struct {
	ID       int    `json:"id"`
	Do       string `json:"do"`
	*Request        // do=open
	N        int    `json:"n,omitempty"` // do=batch
	*Timed          // do=timed
}

// Counts are switch counts over the timed repetitions.
type Counts struct {
	Voluntary        int64 `json:"voluntary"`
	Involuntary      int64 `json:"involuntary"`
	ChildVoluntary   int64 `json:"child_voluntary"`
	ChildInvoluntary int64 `json:"child_involuntary"`
}

// Response is the driver's one line of answer to a Message.
type Response struct {
	ID          int    `json:"id"`
	OK          bool   `json:"ok"`
	Unsupported string `json:"unsupported"`
	Error       string `json:"error"`
	// An open arm's answer: the ops one sample times (a ring's lap), and
	// whether per-op latencies mean anything for its bench.
	Unit    int  `json:"unit"`
	Sampled bool `json:"sampled"`
	// A batch's answer: [ops done, ns].
	Batch [2]int64 `json:"batch"`
	// The timed repetitions' answer.
	RepNs       []int64 `json:"rep_ns"` // elapsed ns of each timed repetition
	Ops         []int64 `json:"ops"`    // ops done in each repetition
	SamplesNs   []int64 `json:"samples_ns"`
	SampleEvery int     `json:"sample_every"`
	// Switches: getrusage(RUSAGE_SELF) over every driver thread, plus
	// forked children from /proc/<pid>/status.
	Switches Counts `json:"switches"`
	// ThreadSwitches: getrusage(RUSAGE_THREAD) of the measuring thread alone.
	ThreadSwitches *Counts `json:"thread_switches"`
	Migrations     *int64  `json:"migrations"`
	SwitchInterval float64 `json:"switch_interval_s"`
	// Affinity is the measuring thread's CPU set during the arm.
	Affinity []int              `json:"affinity"`
	Metrics  map[string]float64 `json:"metrics"`
	Notes    []string           `json:"notes"`
	// Stderr is the driver's stderr while it answered a failed request.
	Stderr string `json:"-"`
}

// ErrProtocol is wrapped by errors about a driver that broke the protocol.
var ErrProtocol = errors.New("driver protocol error")

// checkTimed validates the shape of a timed repetitions' answer.
func (r *Response) checkTimed() error {
	if len(r.RepNs) == 0 || len(r.RepNs) != len(r.Ops) {
		return fmt.Errorf("%w: %d repetition times for %d op counts", ErrProtocol, len(r.RepNs), len(r.Ops))
	}
	for i := range r.RepNs {
		if r.RepNs[i] <= 0 || r.Ops[i] <= 0 {
			return fmt.Errorf("%w: repetition %d has %d ns for %d ops", ErrProtocol, i, r.RepNs[i], r.Ops[i])
		}
	}
	return nil
}

// Session is one running driver process.
type Session struct {
	proc   *child.Proc
	stdin  *os.File
	lines  chan []byte // stdout lines; closed at EOF
	stderr *tail
	errs   chan struct{} // closed when stderr reaches EOF
	Hello  Hello
	nextID int
	dead   bool
}

// maxLine bounds one stdout line (200 000 samples are ~2 MB of JSON).
const maxLine = 64 << 20

// StartSession starts exe with args as a driver and waits for its hello
// line. It is killed, and an error with its stderr returned, when ctx ends
// first or the first line is not a hello.
func StartSession(ctx context.Context, exe string, args []string) (*Session, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	proc, err := child.Start(ctx, child.Options{Exe: exe, Args: args, Stdin: inR, Stdout: outW, Stderr: errW})
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start python driver %s: %w", exe, err)
	}
	s := &Session{proc: proc, stdin: inW, lines: make(chan []byte, 1), stderr: &tail{}, errs: make(chan struct{})}
	go func() {
		defer close(s.lines)
		defer outR.Close()
		br := bufio.NewReaderSize(outR, 1<<16)
		for {
			line, err := readLine(br)
			if len(line) > 0 {
				s.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		defer close(s.errs)
		io.Copy(s.stderr, errR)
		errR.Close()
	}()
	line, err := s.next(ctx)
	if err != nil {
		return nil, err
	}
	var h struct {
		Hello *Hello `json:"hello"`
	}
	if json.Unmarshal(line, &h) != nil || h.Hello == nil {
		s.Kill()
		return nil, fmt.Errorf("%w: the first line is not a hello: %q%s", ErrProtocol, clip(line, 120), s.stderrTail())
	}
	if h.Hello.Protocol != Protocol {
		s.Kill()
		return nil, fmt.Errorf("%w: driver speaks protocol %d, ctxlab %d", ErrProtocol, h.Hello.Protocol, Protocol)
	}
	s.Hello = *h.Hello
	return s, nil
}

// readLine reads one line without its newline; a line longer than maxLine
// is an error.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("%w: a line longer than %d bytes", ErrProtocol, maxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if n := len(line); n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
		}
		return line, err
	}
}

// next returns the next stdout line, or an error (with the stderr tail)
// when the driver exits or ctx ends; either way a failed driver is killed.
func (s *Session) next(ctx context.Context) ([]byte, error) {
	select {
	case line, ok := <-s.lines:
		if ok {
			return line, nil
		}
		s.Kill()
		return nil, fmt.Errorf("python driver exited (%v)%s", s.exitStatus(), s.stderrTail())
	case <-ctx.Done():
		s.Kill()
		return nil, fmt.Errorf("python driver killed: %v%s", context.Cause(ctx), s.stderrTail())
	}
}

// Do sends one message and waits for its answer. A driver that exits,
// hangs past ctx or answers with garbage is killed and the session is dead;
// an answer that says the bench failed or is unsupported leaves it usable.
func (s *Session) Do(ctx context.Context, req Message) (*Response, error) {
	if s.dead {
		return nil, errors.New("python driver session is closed")
	}
	s.nextID++
	req.ID = s.nextID
	s.stderr.Reset()
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := s.stdin.Write(append(b, '\n')); err != nil {
		s.Kill()
		return nil, fmt.Errorf("write request to python driver: %v%s", err, s.stderrTail())
	}
	line, err := s.next(ctx)
	if err != nil {
		return nil, err
	}
	var r Response
	if err := json.Unmarshal(line, &r); err != nil {
		s.Kill()
		return nil, fmt.Errorf("%w: not a JSON result line: %q%s", ErrProtocol, clip(line, 120), s.stderrTail())
	}
	if r.ID != req.ID {
		s.Kill()
		return nil, fmt.Errorf("%w: answer for request %d, want %d%s", ErrProtocol, r.ID, req.ID, s.stderrTail())
	}
	if !r.OK {
		// The driver wrote its traceback before the answer; give the
		// stderr reader a moment to catch up with it.
		for i := 0; i < 10 && s.stderr.String() == ""; i++ {
			time.Sleep(5 * time.Millisecond)
		}
		r.Stderr = s.stderr.String()
	}
	if r.OK && req.Do == "timed" {
		if err := r.checkTimed(); err != nil {
			s.Kill()
			return nil, fmt.Errorf("%w%s", err, s.stderrTail())
		}
	}
	return &r, nil
}

// PID is the driver's process id (its process group id too).
func (s *Session) PID() int { return s.proc.PID() }

// Kill kills the driver's process group (forked children included) and
// reaps it. Safe to call twice.
func (s *Session) Kill() {
	if s.dead {
		return
	}
	s.dead = true
	s.stdin.Close()
	s.proc.Kill()
	select { // let the stderr reader catch the last words
	case <-s.errs:
	case <-time.After(time.Second):
	}
}

// Close ends the driver politely (EOF on stdin), killing it if it does
// not exit within a second.
func (s *Session) Close() {
	if s.dead {
		return
	}
	s.stdin.Close()
	done := make(chan struct{})
	go func() { s.proc.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
	s.Kill()
}

func (s *Session) exitStatus() string {
	err := s.proc.Wait()
	select {
	case <-s.errs:
	case <-time.After(time.Second):
	}
	if err != nil {
		return err.Error()
	}
	return "exit status 0"
}

func (s *Session) stderrTail() string {
	t := s.stderr.String()
	if t == "" {
		return ""
	}
	return "; stderr: " + t
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// tail keeps the last tailMax bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tail) Reset() {
	t.mu.Lock()
	t.buf = t.buf[:0]
	t.mu.Unlock()
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	return s
}
