package pydriver

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// The benches of the seeds' remaining findings (issue 18), each run for
// real with tiny sizes: concurrency under a semaphore or a pool, the
// event-loop lag arms, asyncio.Event ping-pong and the busy process.
func TestRealDriverSeedBenches(t *testing.T) {
	in := realPython(t)
	CloseAll() // a fresh driver, which takes TMPDIR from here
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	defer CloseAll()
	cases := []struct {
		bench  string
		params map[string]string
	}{
		{"pingpong.asyncio-event", nil},
		{"concurrency.sem", map[string]string{"op": "sqlite-file", "c": "10"}},
		{"concurrency.sem", map[string]string{"op": "dict", "c": "1", "how": "executor"}},
		{"concurrency.pool", map[string]string{"op": "sqlite-file", "c": "10"}},
		{"concurrency.pool", map[string]string{"op": "dict", "c": "1"}},
		{"eventloop.lag", map[string]string{"work_ms": "1", "how": "inline"}},
		{"eventloop.lag", map[string]string{"work_ms": "1", "how": "to_thread"}},
		{"eventloop.lag", map[string]string{"work_ms": "1", "how": "process"}},
		{"pingpong.simplequeue", map[string]string{"busy": "1", "busy_in": "process"}},
		{"pingpong.asyncio-queue", map[string]string{"busy": "1", "busy_in": "process"}},
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		ops := 20
		if c.bench == "eventloop.lag" {
			ops = 200 // 1 ms timers must fire in each repetition (every 10th request works 1 ms)
		}
		r, _, err := runArm(ctx, in, Request{Bench: c.bench, Params: c.params}, 2, ops)
		cancel()
		if err != nil {
			t.Fatalf("%s %v: %v; stderr %s", c.bench, c.params, err, stderrOf(err))
		}
		if len(r.RepNs) != 2 {
			t.Fatalf("%s: %d repetitions", c.bench, len(r.RepNs))
		}
		notes := strings.Join(r.Notes, "|")
		switch c.bench {
		case "concurrency.sem", "concurrency.pool":
			if len(r.SamplesNs) != 0 || r.SampleEvery != 0 || !strings.Contains(notes, "in flight at once") {
				t.Errorf("%s %v: %d samples (every %d), notes %q: want none, and a note saying why", c.bench, c.params, len(r.SamplesNs), r.SampleEvery, notes)
			}
		case "eventloop.lag":
			for _, k := range []string{"work-ms", "cpu-request-ratio", "timer-lag-p50-us", "timer-lag-p99-us", "timer-fires", "loop-thread-cpu-ratio"} {
				if _, ok := r.Metrics[k]; !ok {
					t.Errorf("%s %v: no metric %q in %v", c.bench, c.params, k, r.Metrics)
				}
			}
			if r.Metrics["timer-fires"] < 2 || r.Metrics["timer-lag-p99-us"] < r.Metrics["timer-lag-p50-us"] || r.Metrics["cpu-request-ratio"] != 0.1 {
				t.Errorf("%s %v: metrics %v", c.bench, c.params, r.Metrics)
			}
			if !strings.Contains(notes, "I/O-only requests") {
				t.Errorf("%s: notes %q", c.bench, notes)
			}
			if c.params["how"] == "process" && r.Switches.ChildVoluntary+r.Switches.ChildInvoluntary == 0 {
				t.Errorf("%s %v: the pool workers' switches were not counted: %+v", c.bench, c.params, r.Switches)
			}
		}
		// Nothing the arm started outlives it: the driver is alone in its
		// group, and the database file's temp dir is gone.
		if live := liveInGroup(poolPID(in)); len(live) != 1 {
			t.Fatalf("%s %v: after the arm the driver's group holds %v", c.bench, c.params, live)
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Fatalf("%s %v: left %v in TMPDIR", c.bench, c.params, left)
		}
	}
}

// Bad params of the new benches are the arm's error, naming the value; the
// driver goes on.
func TestRealDriverSeedBadParams(t *testing.T) {
	in := realPython(t)
	defer CloseAll()
	for _, c := range []struct {
		bench  string
		params map[string]string
		want   string
	}{
		{"pingpong.simplequeue", map[string]string{"busy": "1", "busy_in": "fiber"}, "'fiber'"},
		{"concurrency.sem", map[string]string{"op": "redis", "c": "1"}, "'redis'"},
		{"concurrency.sem", map[string]string{"c": "1", "how": "gevent"}, "'gevent'"},
		{"eventloop.lag", map[string]string{"work_ms": "1", "how": "celery"}, "'celery'"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _, err := runArm(ctx, in, Request{Bench: c.bench, Params: c.params}, 1, 10)
		cancel()
		var ref *Refused
		if !errors.As(err, &ref) || !strings.Contains(ref.Reason, c.want) {
			t.Errorf("%s %v: err=%v; want a refusal naming %s", c.bench, c.params, err, c.want)
		}
	}
}

// A process-pool worker that dies mid-arm fails the arm (BrokenProcessPool),
// not the driver, and leaves no process behind.
func TestRealDriverEventLoopPoolCrash(t *testing.T) {
	in := realPython(t)
	defer CloseAll()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := Request{Bench: "pingpong.future"}
	if _, _, err := runArm(ctx, in, req, 1, 10); err != nil {
		t.Fatal(err)
	}
	pid := poolPID(in)
	// period 1: every request is a CPU one, the first included.
	req.Bench, req.Params = "eventloop.lag", map[string]string{"work_ms": "0.1", "how": "process", "period": "1", "fault": "crash"}
	_, _, err := runArm(ctx, in, req, 1, 10)
	var ref *Refused
	if !errors.As(err, &ref) || !strings.Contains(ref.Reason, "BrokenProcessPool") {
		t.Fatalf("err=%v; want the arm to fail with BrokenProcessPool", err)
	}
	if poolPID(in) != pid {
		t.Fatal("the driver was restarted after a pool worker crashed")
	}
	if live := liveInGroup(pid); !slices.Equal(live, []int{pid}) {
		t.Fatalf("after the crashed arm the driver's group holds %v, want only the driver %d", live, pid)
	}
}

// A process-pool worker that hangs is killed at the arm's limit with the
// driver and every other process of its group.
func TestRealDriverEventLoopPoolHangKilled(t *testing.T) {
	in := realPython(t)
	defer CloseAll()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := Request{Bench: "pingpong.future"}
	if _, _, err := runArm(ctx, in, req, 1, 10); err != nil {
		t.Fatal(err)
	}
	pid := poolPID(in)
	limit, cancel2 := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel2()
	req.Bench, req.Params = "eventloop.lag", map[string]string{"work_ms": "0.1", "how": "process", "period": "1", "fault": "hang"}
	start := time.Now()
	_, _, err := runArm(limit, in, req, 1, 10)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("err = %v; want the driver killed at the limit", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("Do returned after %v: not at the limit", took)
	}
	if !gone(pid) {
		t.Fatalf("driver group %d survived the limit: %v", pid, liveInGroup(pid))
	}
}
