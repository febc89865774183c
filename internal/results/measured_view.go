package results

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/run"
)

// The terminal views every executor-measured run shares; workloads compose
// them with their own.

// RunTable is one row per run: run, script, clients, seconds, tps, latency
// avg/p50/p95/p99/max, errors and status (the table quickstart ends with).
func RunTable(rows []*Summary) *Table {
	t := &Table{Columns: []string{"run", "script", "clients", "seconds", "tps", "avg ms", "p50 ms", "p95 ms", "p99 ms", "max ms", "errors", "status"}}
	for _, r := range rows {
		m := r.Measured
		if m == nil {
			m = &Measured{}
		}
		l := m.LatencyMs
		t.Row(strconv.FormatInt(r.RunID, 10), m.Script, strconv.Itoa(m.Clients), fmt.Sprintf("%.1f", m.DurationS), fmt.Sprintf("%.1f", m.TPS),
			F3(l.Avg), F3(l.P50), F3(l.P95), F3(l.P99), F3(l.Max), strconv.FormatInt(m.Errors, 10), r.Status)
	}
	return t
}

// F3 formats milliseconds with three decimals.
func F3(v float64) string { return fmt.Sprintf("%.3f", v) }

// SlackText spells a timer slack given in microseconds: "25 µs", "1 ns".
func SlackText(us float64) string {
	if us < 1 {
		return fmt.Sprintf("%g ns", us*1000)
	}
	return fmt.Sprintf("%g µs", us)
}

// OutcomeLines are the non-zero outcome classes and SQLSTATEs, the
// retried attempts by SQLSTATE, outages, the open loop's figures and the
// driver's cost.
func OutcomeLines(s *Summary) []Block {
	m := s.Measured
	if m == nil {
		return nil
	}
	var out []Block
	add := func(format string, a ...any) { out = append(out, Line(fmt.Sprintf(format, a...))) }
	var parts []string
	for _, k := range sortedKeys(m.Outcomes) {
		if m.Outcomes[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m.Outcomes[k]))
		}
	}
	add("outcomes: %s", strings.Join(parts, ", "))
	if len(m.BySQLState) > 0 {
		parts = parts[:0]
		for _, k := range sortedKeys(m.BySQLState) {
			parts = append(parts, fmt.Sprintf("%s %d", k, m.BySQLState[k]))
		}
		add("errors by SQLSTATE: %s", strings.Join(parts, ", "))
	}
	if m.Retries > 0 {
		parts = parts[:0]
		for _, k := range sortedKeys(m.AttemptFailures) {
			parts = append(parts, fmt.Sprintf("%s %d", k, m.AttemptFailures[k]))
		}
		add("retries: %d failed attempts tried again, by SQLSTATE: %s", m.Retries, strings.Join(parts, ", "))
	}
	for _, o := range m.Outages {
		add("outage: %.1f s .. %.1f s (%d connection errors)", o.StartS, o.EndS, o.Errors)
	}
	if ol := m.OpenLoop; ol != nil {
		// Runs stored before the dispatch delay was measured have none.
		dispatch := ""
		if d := ol.DispatchDelayMs; d.Max > 0 {
			slack := ""
			if ol.TimerSlackUs > 0 {
				slack = ", timer slack " + SlackText(ol.TimerSlackUs)
			}
			dispatch = fmt.Sprintf(" (the driver's dispatch delay p50 %.3f p99 %.3f ms%s)", d.P50, d.P99, slack)
		}
		add("open loop: target %.1f tps, achieved %.1f tps; schedule lag p50 %.3f p99 %.3f max %.3f ms%s; service p99 %.3f ms; skipped %d, late %d",
			ol.TargetTPS, ol.AchievedTPS, ol.ScheduleLagMs.P50, ol.ScheduleLagMs.P99, ol.ScheduleLagMs.Max, dispatch,
			ol.ServiceMs.P99, ol.Skipped, ol.Late)
	}
	add("driver: %.2f CPU s (%.1f ms per 1,000 transactions), %d GC pauses", m.Driver.CPUSeconds, m.Driver.CPUMsPer1000Tx, m.Driver.GCPauses)
	if m.FollowServer {
		add("driver threads: %d, one pinned per CPU, following the server processes (%d connection handovers)", m.Threads, m.Handovers)
	}
	if m.ThreadsNote != "" {
		add("driver threads: %s", m.ThreadsNote)
	}
	return out
}

// TickLine is the executor's live progress line: tps, p95, p99, errors;
// "" for the drain (a partial interval while in-flight work finishes is not
// a rate).
func TickLine(tk run.Tick) string {
	if tk.Phase == run.PhaseDrain {
		return ""
	}
	phase := ""
	if tk.Phase != "" && tk.Phase != run.PhaseMeasure {
		phase = " [" + tk.Phase + "]"
	}
	return fmt.Sprintf("progress: %6.1f s, %9.1f tps, p95 %7.3f ms, p99 %7.3f ms, errors %d%s", tk.T, tk.TPS, tk.P95Ms, tk.P99Ms, tk.Errors, phase)
}

// BriefTPS is the one-line result of a run measured in tps.
func BriefTPS(s *Summary) string {
	m := s.Measured
	if m == nil {
		return ""
	}
	return "clients " + strconv.Itoa(m.Clients) + ", tps " + strconv.FormatFloat(m.TPS, 'f', 1, 64) +
		", p95 " + strconv.FormatFloat(m.LatencyMs.P95, 'f', 3, 64) + " ms, errors " + strconv.FormatInt(m.Errors, 10)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
