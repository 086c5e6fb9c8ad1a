package mech

import "testing"

// BenchmarkPlainChanRoundTrip is the plain testing.B loop of a goroutine
// channel round trip. ctxlab's pingpong/goroutine/chan arm must agree with
// it (the harness's own overhead is small): compare
//
//	go test ./internal/mech -bench PlainChan -cpu 1,2
//	ctxlab run 'pingpong/goroutine/chan/*'
func BenchmarkPlainChanRoundTrip(b *testing.B) {
	ab, ba := make(chan uint64), make(chan uint64)
	go func() {
		for v := range ab {
			ba <- v
		}
		close(ba)
	}()
	for i := 0; i < b.N; i++ {
		ab <- uint64(i)
		<-ba
	}
	b.StopTimer()
	close(ab)
	<-ba
}

// BenchmarkEndpointChanRoundTrip is the same loop through ctxlab's Endpoint
// interface, to show what the interface call costs.
func BenchmarkEndpointChanRoundTrip(b *testing.B) {
	p, _ := NewPair("chan")
	go Echo(p.B)
	b.ResetTimer()
	RoundTrips(p.A, b.N, nil)
	b.StopTimer()
	p.A.Send(Stop)
}

// BenchmarkThreadPipeRoundTripCPU0 is the pipe round trip between two
// locked threads pinned to CPU 0, without ctxlab's runner: the figure
// `ctxlab run pingpong/thread/pipe/unpinned --cpus 0` must match, and what
// `taskset -c 0 perf bench sched pipe -T` measures for C threads.
func BenchmarkThreadPipeRoundTripCPU0(b *testing.B) {
	p, err := NewPair("pipe")
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ta, err := StartThread([]int{0})
	if err != nil {
		b.Skip("cannot pin to CPU 0:", err)
	}
	defer ta.Stop()
	tb, _ := StartThread([]int{0})
	defer tb.Stop()
	echoed, _ := tb.Go(func() { Echo(p.B) })
	ta.Do(func() {
		b.ResetTimer()
		RoundTrips(p.A, b.N, nil)
		b.StopTimer()
	})
	p.Stop()
	<-echoed
}
