package serve

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctxlab/ctxlab/internal/result"
)

// harnessMetrics export the last selfcheck stored for this host, so a
// fleet sees the harness's overhead per host: each checked arm's ratio to
// its reference, its limit, and when it was measured. Nothing is exported
// for a host never checked (the index page says how to check it).
func harnessMetrics(h *result.HarnessCheck) []prometheus.Collector {
	ratio := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ctxlab_selfcheck_ratio",
		Help: "the last ctxlab selfcheck on this host: the arm's median ÷ an independent reference's (perf bench, a plain loop), median of interleaved rounds"},
		[]string{"arm", "reference"})
	limit := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ctxlab_selfcheck_limit_ratio",
		Help: "the ratio above which ctxlab selfcheck calls the arm over its limit"}, []string{"arm"})
	over := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ctxlab_selfcheck_over",
		Help: "1 when ctxlab selfcheck found the arm over its limit against every reference it was held to (the process pipe has two: perf bench's C processes and the same raw loop between Go processes), else 0"}, []string{"arm"})
	at := prometheus.NewGauge(prometheus.GaugeOpts{Name: "ctxlab_selfcheck_timestamp_seconds",
		Help: "when the last ctxlab selfcheck on this host ran (Unix time)"})
	for _, r := range h.Rows {
		if r.Status != result.StatusOK {
			continue
		}
		ratio.WithLabelValues(r.Arm, r.Reference).Set(r.Ratio)
		limit.WithLabelValues(r.Arm).Set(r.Limit)
		if best, _ := h.Row(r.Arm); best.Over() {
			over.WithLabelValues(r.Arm).Set(1)
		} else {
			over.WithLabelValues(r.Arm).Set(0)
		}
	}
	at.Set(float64(h.Time.UnixNano()) / 1e9)
	return []prometheus.Collector{ratio, limit, over, at}
}
