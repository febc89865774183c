package results

import (
	"encoding/json"
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/step"
)

// Measured is what the executor measured, in the summary's terms
// (docs/json-summary.md); field names carry their unit.
type Measured struct {
	// Script (or mode), Protocol and Scale describe the run in the
	// workload's terms: tpcb's script, protocol and scale; tpcc's mode and
	// warehouses.
	Script   string `json:"script"`
	Protocol string `json:"protocol"`
	Clients  int    `json:"clients"`
	Threads  int    `json:"threads"`
	// ThreadsNote: why the clients had a thread each although --threads
	// asked for fewer (TLS connections cannot be polled).
	ThreadsNote string `json:"threads_note,omitempty"`
	// FollowServer: the threads were pinned one per CPU and connections
	// followed their server process; Handovers counts connections moved
	// between threads.
	FollowServer bool    `json:"follow_server"`
	Handovers    int64   `json:"handovers"`
	Scale        int     `json:"scale"`
	DurationS    float64 `json:"duration_s"`
	WarmupS      float64 `json:"warmup_s"`
	// Transactions committed in the measurement phase; tps = transactions / duration_s.
	Transactions int64            `json:"transactions"`
	TPS          float64          `json:"tps"`
	LatencyMs    Latency          `json:"latency_ms"`
	LatencyNote  string           `json:"latency_note"`
	Outcomes     map[string]int64 `json:"outcomes"`
	Errors       int64            `json:"errors"`
	ErrorsPct    float64          `json:"errors_pct"`
	BySQLState   map[string]int64 `json:"errors_by_sqlstate"`
	// Retries counts the failed attempts that were tried again, and
	// AttemptFailures splits them by SQLSTATE: failures that do not show
	// in the outcomes (the transaction's final one) or in BySQLState.
	Retries         int64             `json:"retries"`
	AttemptFailures map[string]int64  `json:"attempt_failures"`
	Unfinished      int64             `json:"unfinished"`
	Outages         []Outage          `json:"outages,omitempty"`
	OpenLoop        *OpenLoop         `json:"open_loop,omitempty"`
	Driver          DriverStats       `json:"driver"`
	Check           json.RawMessage   `json:"check,omitempty"`
	Settings        map[string]string `json:"settings_applied,omitempty"`
}

// Latency is a latency distribution in milliseconds.
type Latency struct {
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

// Outage is a window of connection errors with nothing completing.
type Outage struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	Errors int64   `json:"errors"`
}

// OpenLoop is what an open-loop (rate) run adds.
type OpenLoop struct {
	TargetTPS     float64 `json:"target_tps"`
	AchievedTPS   float64 `json:"achieved_tps"`
	ScheduleLagMs Latency `json:"schedule_lag_ms"`
	// DispatchDelayMs is the driver's own part of the schedule lag: from
	// when a start could have begun (its intended time, or when a worker
	// became free if later) to when it did. The rest is queueing.
	DispatchDelayMs Latency `json:"dispatch_delay_ms"`
	ServiceMs       Latency `json:"service_ms"`
	LatencyLimitMs  float64 `json:"latency_limit_ms,omitempty"`
	// TimerSlackUs is how late the kernel could wake the driver for a
	// start (run.Config.TimerSlack); runs stored before it was set have 0.
	TimerSlackUs  float64 `json:"timer_slack_us,omitempty"`
	Skipped       int64   `json:"skipped"`
	Late          int64   `json:"late"`
	MaxQueueDepth int64   `json:"max_queue_depth"`
}

// DriverStats is tunebench's own cost over the measurement.
type DriverStats struct {
	CPUSeconds     float64 `json:"cpu_s"`
	CPUMsPer1000Tx float64 `json:"cpu_ms_per_1000_tx"`
	GCPauses       int64   `json:"gc_pauses"`
	GCPauseTotalMs float64 `json:"gc_pause_total_ms"`
	ThinkOverrunMs float64 `json:"think_overrun_ms"`
}

// LatencyOf summarises a histogram (zero for an empty one).
func LatencyOf(h *metrics.Hist) Latency {
	if h == nil || h.Count() == 0 {
		return Latency{}
	}
	p := h.PercentilesMs(50, 90, 95, 99, 99.9)
	return Latency{Avg: h.MeanMs(), StdDev: h.StdDevMs(), Min: h.MinMs(), P50: p[0], P90: p[1], P95: p[2], P99: p[3], P999: p[4], Max: h.MaxMs(), Overflow: h.Overflow()}
}

// FromRun turns an executor result into a summary (status and workload left
// for the caller).
func FromRun(res *run.Result) *Summary {
	m := &Measured{
		Clients: res.Workers, Threads: res.Threads, ThreadsNote: res.ThreadsNote, FollowServer: res.FollowServer, Handovers: res.Handovers, DurationS: res.MeasuredSeconds,
		Transactions: res.Committed, TPS: res.TPS,
		LatencyMs:  LatencyOf(res.Latency),
		Outcomes:   map[string]int64{},
		Errors:     res.Errors,
		BySQLState: map[string]int64{},
		Retries:    res.Retries,
		Unfinished: res.Unfinished,

		AttemptFailures: map[string]int64{},
	}
	for k, n := range res.Retried {
		m.AttemptFailures[k] = n
	}
	var total int64
	for c := step.OutcomeClass(0); c < step.NumClasses; c++ {
		n := res.Totals[c]
		m.Outcomes[c.String()] = n
		total += n
	}
	if total > 0 {
		m.ErrorsPct = 100 * float64(res.Errors) / float64(total)
	}
	for k, n := range res.SQLStates {
		m.BySQLState[k] = n
	}
	for _, o := range res.Outages {
		m.Outages = append(m.Outages, Outage{StartS: o.Start, EndS: o.End, Errors: o.Errors})
	}
	if res.OpenLoop {
		m.LatencyNote = "open loop: latency from the intended (scheduled) start; schedule lag and service time reported separately"
		m.OpenLoop = &OpenLoop{
			TargetTPS: res.TargetRate, AchievedTPS: res.TPS,
			ScheduleLagMs: LatencyOf(res.Lag), DispatchDelayMs: LatencyOf(res.Dispatch), ServiceMs: LatencyOf(res.Service),
			Skipped: res.Skipped, Late: res.Late, MaxQueueDepth: res.MaxQueueDepth,
			TimerSlackUs: float64(res.TimerSlack) / float64(time.Microsecond),
		}
	} else {
		m.LatencyNote = "closed loop: response time from the actual start; subject to coordinated omission"
	}
	m.Driver = DriverStats{
		CPUSeconds: res.DriverCPUSeconds, GCPauses: res.GCPauses,
		GCPauseTotalMs: float64(res.GCPauseTotal) / 1e6, ThinkOverrunMs: float64(res.ThinkOverrun) / 1e6,
	}
	if res.Committed > 0 {
		m.Driver.CPUMsPer1000Tx = 1e6 * res.DriverCPUSeconds / float64(res.Committed)
	}
	return &Summary{SchemaVersion: SchemaVersion, StartedAt: res.StartedAt, EndedAt: res.EndedAt, Interrupted: res.Interrupted, Measured: m}
}
