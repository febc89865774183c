package lifecycle

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tunebench/tunebench/internal/driver"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
)

// decideStatus sets the status of a run the executor measured, and the
// reasons for it (results.Reason): failed > interrupted > errors > ok. The
// status is failed when a check failed or when a worker stopped the run
// (execErr: a script error, pgbench's aborted client); errors when
// transactions ended in errors, when outages covered more than
// x.MaxOutagePct of the measured window, or when checks after the run
// could not run (v.NotRun, or After's error afterErr).
func decideStatus(sum *results.Summary, res *run.Result, v *workload.Verdict, afterErr, execErr error, x workload.Exec) {
	var rs []results.Reason
	add := func(code, format string, a ...any) {
		rs = append(rs, results.Reason{Code: code, Detail: fmt.Sprintf(format, a...)})
	}
	if execErr != nil {
		add(results.ReasonAborted, "stopped before its end by an error, the figures cover part of the run: %v", execErr)
	}
	for _, f := range v.Failures {
		add(results.ReasonCheckFailed, "%s", failureText(f))
	}
	if res.Interrupted {
		add(results.ReasonInterrupted, "interrupted before its end: the figures cover part of the run")
	}
	if m := sum.Measured; m != nil {
		if secs := results.OutageSeconds(m.Outages, m.DurationS); m.DurationS > 0 && 100*secs/m.DurationS > x.MaxOutagePct {
			add(results.ReasonOutage, "the server was unreachable for %.1f s of the %.1f s measured (%.0f%%, over the %g%% that --max-outage-pct accepts): see the outage lines",
				secs, m.DurationS, 100*secs/m.DurationS, x.MaxOutagePct)
		}
	}
	if m := sum.Measured; m != nil && !res.Interrupted && execErr == nil && m.DurationS > 0 && m.Transactions+m.Errors == 0 {
		add(results.ReasonNoTransactions, "%s", noTransactions(m))
	}
	for _, n := range v.NotRun {
		add(results.ReasonNotChecked, "%s", n)
	}
	rs = append(rs, hostGapReasons(sum)...)
	if afterErr != nil {
		add(results.ReasonNotChecked, "the work after the run (checks) failed: %v", afterErr)
	}
	switch {
	case sum.ErrorsPct > x.MaxErrorsPct:
		add(results.ReasonErrorsOver, "%d transactions ended in errors, %.2f%% (over the %g%% that --max-errors-pct accepts)", sum.Errors, sum.ErrorsPct, x.MaxErrorsPct)
	case res.Errors > 0:
		add(results.ReasonErrors, "%d transactions ended in errors, %.2f%% (within the %g%% that --max-errors-pct accepts)", res.Errors, sum.ErrorsPct, x.MaxErrorsPct)
	}
	sum.StatusReasons = rs
	switch {
	case len(v.Failures) > 0 || execErr != nil:
		sum.Status = store.StatusFailed
	case res.Interrupted:
		sum.Status = store.StatusInterrupted
	case len(rs) > 0:
		sum.Status = store.StatusErrors
	default:
		sum.Status = store.StatusOK
	}
}

// errorsExit is the exit error (code 4) of a stored run whose status is
// errors for a reason that must not pass unnoticed: an outage, checks that
// could not run, errors over the threshold. Nil when there is none. space,
// when not nil, names the filesystem of the server's data for a run whose
// errors were mostly disk full.
func errorsExit(sum *results.Summary, id int64, w workload.Workload, t target.Target, space func() driver.Space) error {
	var why, hints []string
	for _, r := range sum.StatusReasons {
		switch r.Code {
		case results.ReasonOutage:
			why = append(why, r.Detail)
			hints = append(hints, outageHint(sum))
		case results.ReasonNoTransactions:
			why = append(why, r.Detail)
			hints = append(hints, noTransactionsHint(sum.Measured))
		case results.ReasonNotChecked:
			why = append(why, r.Detail)
			if _, ok := w.(workload.Checker); ok {
				hints = append(hints, fmt.Sprintf("check the database with `tunebench check %s` once it is reachable", w.Meta().Name))
			}
		case results.ReasonErrorsOver:
			why = append(why, r.Detail)
			hint := ""
			if h, ok := t.(target.ErrorsHinter); ok {
				hint = h.ErrorsHint(sum.BySQLState) // the target's own error codes
			}
			if hint == "" {
				hint = driver.ErrorsHint(sum.BySQLState, space) // by the SQLSTATE most errors had
			}
			hints = append(hints, hint)
		}
	}
	if len(why) == 0 {
		return nil
	}
	hints = slices.Compact(hints)
	return errs.New(errs.KindRunErrors, strings.Join(hints, "; "), "run %d ended with status %s: %s", id, sum.Status, strings.Join(why, "; "))
}

// noTransactions says why no transaction ended in the measured window, as
// far as the run knows.
func noTransactions(m *results.Measured) string {
	detail := fmt.Sprintf("no transaction ended in the %.1f s measured", m.DurationS)
	switch {
	case m.Unfinished > 0:
		detail += fmt.Sprintf(": %d were still running and were cancelled after the wait of %s that follows the window", m.Unfinished, run.DefaultDrainTimeout)
	case m.OpenLoop != nil && m.OpenLoop.Skipped > 0:
		detail += fmt.Sprintf(": all %d starts were skipped, later than --latency-limit", m.OpenLoop.Skipped)
	case m.OpenLoop != nil:
		detail += fmt.Sprintf(": the schedule of %g tps drew no start in it", m.OpenLoop.TargetTPS)
	}
	return detail
}

// noTransactionsHint is the fix for a run without transactions.
func noTransactionsHint(m *results.Measured) string {
	switch {
	case m == nil || m.Unfinished > 0:
		return "give the run more time than one transaction takes (--duration), or make its transactions shorter"
	case m.OpenLoop != nil && m.OpenLoop.Skipped > 0:
		return "raise --latency-limit, or lower --rate to what the server can serve"
	case m.OpenLoop != nil:
		return "raise --rate or --duration so that the schedule draws starts"
	}
	return "look at the server (its log) and the run's progress lines: nothing ended"
}

// outageHint is the fix for a run with too long outages: first the
// server (down at the end of the run, or why it went away), the threshold
// only for outages the user expects.
func outageHint(sum *results.Summary) string {
	const raise = "raise --max-outage-pct only to accept outages you expect (a restart, a failover)"
	if m := sum.Measured; m != nil && len(m.Outages) > 0 {
		if last := m.Outages[len(m.Outages)-1]; last.EndS >= m.DurationS-0.5 {
			return "check the server first: it was still unreachable when the run ended (its log; `tunebench server status --dir D` for a managed one); " + raise
		}
	}
	return "check the server's log for why it was unreachable; " + raise
}

// failureText is a failed check in one line.
func failureText(f workload.Failure) string {
	if f.Detail != "" {
		return f.What + " failed: " + f.Detail
	}
	return f.What + " failed"
}

// hostGapReasons are the reasons of a run whose server host or container
// metrics are missing for more than MaxHostGapPct of the measured window
// (a source that failed or timed out): the run's own figures stand, its
// status is errors.
func hostGapReasons(sum *results.Summary) []results.Reason {
	var rs []results.Reason
	for _, h := range sum.Hosts {
		if h.Role == results.HostDriver || h.MissingPct <= MaxHostGapPct {
			continue
		}
		d := fmt.Sprintf("the %s's metrics (%s) are missing for %.0f%% of the measured window, over the %.0f%% the run accepts",
			map[string]string{results.HostServer: "server host", results.HostContainer: "server's container"}[h.Role], h.Source, h.MissingPct, MaxHostGapPct)
		if h.Error != "" {
			d += ": " + h.Error
		}
		rs = append(rs, results.Reason{Code: results.ReasonHostGap, Detail: d})
	}
	return rs
}

// markHostGaps adds the host gap reasons to a self-measured run's status
// (an ok run becomes errors).
func markHostGaps(sum *results.Summary) {
	rs := hostGapReasons(sum)
	if len(rs) == 0 {
		return
	}
	sum.StatusReasons = append(sum.StatusReasons, rs...)
	if sum.Status == store.StatusOK || sum.Status == "" {
		sum.Status = store.StatusErrors
	}
}
