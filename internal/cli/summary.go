package cli

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/workload"
)

// summary is the run summary: what --json writes, what the store keeps, and
// what the terminal table shows. Documented in docs/json-summary.md; field
// names carry their unit.
type summary struct {
	RunID     int64     `json:"run_id"`
	Workload  string    `json:"workload"`
	Script    string    `json:"script"`
	Protocol  string    `json:"protocol"`
	Status    string    `json:"status"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	Clients   int       `json:"clients"`
	Threads   int       `json:"threads"`
	// FollowServer: the threads were pinned one per CPU and connections
	// followed their server process (--follow-server); Handovers counts
	// connections moved between threads.
	FollowServer bool    `json:"follow_server"`
	Handovers    int64   `json:"handovers"`
	Scale        int     `json:"scale"`
	DurationS    float64 `json:"duration_s"`
	WarmupS      float64 `json:"warmup_s"`
	// Transactions committed in the measurement phase; tps = transactions / duration_s.
	Transactions int64             `json:"transactions"`
	TPS          float64           `json:"tps"`
	LatencyMs    latencyMs         `json:"latency_ms"`
	LatencyNote  string            `json:"latency_note"`
	Outcomes     map[string]int64  `json:"outcomes"`
	Errors       int64             `json:"errors"`
	ErrorsPct    float64           `json:"errors_pct"`
	BySQLState   map[string]int64  `json:"errors_by_sqlstate"`
	Retries      int64             `json:"retries"`
	Unfinished   int64             `json:"unfinished"`
	Outages      []outage          `json:"outages,omitempty"`
	OpenLoop     *openLoop         `json:"open_loop,omitempty"`
	Driver       driverStats       `json:"driver"`
	Check        any               `json:"check,omitempty"`
	Interrupted  bool              `json:"interrupted"`
	Settings     map[string]string `json:"settings_applied,omitempty"`
	// TPC-C-like runs add their fields at the top level.
	*TPCCSummary
}

// TPCCSummary is what a tpcc run adds to the summary (docs/json-summary.md).
type TPCCSummary struct {
	VUsers        int     `json:"vusers"`
	Warehouses    int     `json:"warehouses"`
	Mode          string  `json:"mode"`
	Isolation     string  `json:"isolation"`
	AllWarehouses bool    `json:"all_warehouses"`
	KeyingThink   bool    `json:"keying_think"`
	NOPM          float64 `json:"nopm"`
	// NOPMDatabase is HammerDB's NOPM: the growth of sum(d_next_o_id) over
	// the measured interval, per minute.
	NOPMDatabase   float64    `json:"nopm_database"`
	TPM            float64    `json:"tpm"`
	NOPMCheck      *nopmCheck `json:"nopm_check,omitempty"`
	PerTransaction []txnStats `json:"per_transaction"`
	Audits         any        `json:"audits,omitempty"`
}

// nopmCheck compares the driver's committed New-Orders with the database.
type nopmCheck struct {
	DriverCommitted int64  `json:"driver_committed"`
	DatabaseGrowth  int64  `json:"database_growth"`
	Ambiguous       int64  `json:"ambiguous"`
	Passed          bool   `json:"passed"`
	Detail          string `json:"detail"`
}

// txnStats is the time profile of one transaction type (HammerDB's set).
type txnStats struct {
	Op       string  `json:"op"`
	Count    int64   `json:"count"`
	MinMs    float64 `json:"min_ms"`
	AvgMs    float64 `json:"avg_ms"`
	MaxMs    float64 `json:"max_ms"`
	StdDevMs float64 `json:"stddev_ms"`
	P50Ms    float64 `json:"p50_ms"`
	P90Ms    float64 `json:"p90_ms"`
	P95Ms    float64 `json:"p95_ms"`
	P99Ms    float64 `json:"p99_ms"`
	TotalS   float64 `json:"total_s"`
}

type latencyMs struct {
	Avg    float64 `json:"avg"`
	StdDev float64 `json:"stddev"`
	Min    float64 `json:"min"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p99_9"`
	Max    float64 `json:"max"`
	// Overflow counts values above the histogram's 1 h range (recorded at the maximum).
	Overflow int64 `json:"overflow"`
}

type outage struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	Errors int64   `json:"errors"`
}

type openLoop struct {
	TargetTPS      float64   `json:"target_tps"`
	AchievedTPS    float64   `json:"achieved_tps"`
	ScheduleLagMs  latencyMs `json:"schedule_lag_ms"`
	ServiceMs      latencyMs `json:"service_ms"`
	LatencyLimitMs float64   `json:"latency_limit_ms,omitempty"`
	Skipped        int64     `json:"skipped"`
	Late           int64     `json:"late"`
	MaxQueueDepth  int64     `json:"max_queue_depth"`
}

type driverStats struct {
	CPUSeconds     float64 `json:"cpu_s"`
	CPUMsPer1000Tx float64 `json:"cpu_ms_per_1000_tx"`
	GCPauses       int64   `json:"gc_pauses"`
	GCPauseTotalMs float64 `json:"gc_pause_total_ms"`
	ThinkOverrunMs float64 `json:"think_overrun_ms"`
}

func latencyOf(h *metrics.Hist) latencyMs {
	if h == nil || h.Count() == 0 {
		return latencyMs{}
	}
	p := h.PercentilesMs(50, 90, 95, 99, 99.9)
	return latencyMs{Avg: h.MeanMs(), StdDev: h.StdDevMs(), Min: h.MinMs(), P50: p[0], P90: p[1], P95: p[2], P99: p[3], P999: p[4], Max: h.MaxMs(), Overflow: h.Overflow()}
}

// buildSummary turns an executor result into the summary.
func buildSummary(res *run.Result) summary {
	sum := summary{
		StartedAt: res.StartedAt, EndedAt: res.EndedAt,
		Clients: res.Workers, Threads: res.Threads, FollowServer: res.FollowServer, Handovers: res.Handovers, DurationS: res.MeasuredSeconds,
		Transactions: res.Committed, TPS: res.TPS,
		LatencyMs:   latencyOf(res.Latency),
		Outcomes:    map[string]int64{},
		Errors:      res.Errors,
		BySQLState:  map[string]int64{},
		Unfinished:  res.Unfinished,
		Interrupted: res.Interrupted,
	}
	var total int64
	for c := workload.OutcomeClass(0); c < workload.NumClasses; c++ {
		n := res.Totals[c]
		sum.Outcomes[c.String()] = n
		total += n
	}
	if total > 0 {
		sum.ErrorsPct = 100 * float64(res.Errors) / float64(total)
	}
	for k, n := range res.SQLStates {
		sum.BySQLState[k] = n
	}
	for _, o := range res.Outages {
		sum.Outages = append(sum.Outages, outage{StartS: o.Start, EndS: o.End, Errors: o.Errors})
	}
	if res.OpenLoop {
		sum.LatencyNote = "open loop: latency from the intended (scheduled) start; schedule lag and service time reported separately"
		sum.OpenLoop = &openLoop{
			TargetTPS: res.TargetRate, AchievedTPS: res.TPS,
			ScheduleLagMs: latencyOf(res.Lag), ServiceMs: latencyOf(res.Service),
			Skipped: res.Skipped, Late: res.Late, MaxQueueDepth: res.MaxQueueDepth,
		}
	} else {
		sum.LatencyNote = "closed loop: response time from the actual start; subject to coordinated omission"
	}
	sum.Driver = driverStats{
		CPUSeconds: res.DriverCPUSeconds, GCPauses: res.GCPauses,
		GCPauseTotalMs: float64(res.GCPauseTotal) / 1e6, ThinkOverrunMs: float64(res.ThinkOverrun) / 1e6,
	}
	if res.Committed > 0 {
		sum.Driver.CPUMsPer1000Tx = 1e6 * res.DriverCPUSeconds / float64(res.Committed)
	}
	return sum
}

// printSummaryTable prints one row per run: the table quickstart ends with.
func printSummaryTable(s *State, rows []summary) {
	tw := tabwriter.NewWriter(s.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tscript\tclients\tseconds\ttps\tavg ms\tp50 ms\tp95 ms\tp99 ms\tmax ms\terrors\tstatus\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%.1f\t%.1f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%s\t\n",
			r.RunID, r.Script, r.Clients, r.DurationS, r.TPS, r.LatencyMs.Avg, r.LatencyMs.P50, r.LatencyMs.P95, r.LatencyMs.P99, r.LatencyMs.Max, r.Errors, r.Status)
	}
	tw.Flush()
}

// printOutcomes prints non-zero outcome classes and SQLSTATEs.
func printOutcomes(s *State, r summary) {
	var parts []string
	for _, k := range sortedKeys(r.Outcomes) {
		if r.Outcomes[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, r.Outcomes[k]))
		}
	}
	s.printf("outcomes: %s\n", strings.Join(parts, ", "))
	if len(r.BySQLState) > 0 {
		parts = parts[:0]
		for _, k := range sortedKeys(r.BySQLState) {
			parts = append(parts, fmt.Sprintf("%s %d", k, r.BySQLState[k]))
		}
		s.printf("errors by SQLSTATE: %s\n", strings.Join(parts, ", "))
	}
	for _, o := range r.Outages {
		s.printf("outage: %.1f s .. %.1f s (%d connection errors)\n", o.StartS, o.EndS, o.Errors)
	}
	if ol := r.OpenLoop; ol != nil {
		s.printf("open loop: target %.1f tps, achieved %.1f tps; schedule lag p99 %.3f ms max %.3f ms; service p99 %.3f ms; skipped %d, late %d\n",
			ol.TargetTPS, ol.AchievedTPS, ol.ScheduleLagMs.P99, ol.ScheduleLagMs.Max, ol.ServiceMs.P99, ol.Skipped, ol.Late)
	}
	s.printf("driver: %.2f CPU s (%.1f ms per 1,000 transactions), %d GC pauses\n", r.Driver.CPUSeconds, r.Driver.CPUMsPer1000Tx, r.Driver.GCPauses)
	if r.FollowServer {
		s.printf("driver threads: %d, one pinned per CPU, following the server processes (%d connection handovers)\n", r.Threads, r.Handovers)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
