package lifecycle

import (
	"context"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
)

// startLead is how long after the last shard joined the rendezvous the
// shards start: every shard sees the last join within a poll (200 ms) and
// a round trip; its clients are connected already.
const startLead = time.Second

// Meeting is how a shard of a split run meets the others (--rendezvous):
// under Key at the database, waiting at most Timeout; Note prints a line.
type Meeting struct {
	Shard   workload.Shard
	Key     string
	Timeout time.Duration
	Note    func(format string, a ...any)
}

// Meet measures this machine's clock against the database server's and,
// with a key, waits at the database until every shard has joined, then
// until their common start (on the server's clock); what it measured and
// agreed goes into the shard's record. It is a Request.Barrier.
func (m Meeting) Meet(ctx context.Context, t target.Target, rec *results.Shard) error {
	rz, ok := t.(target.Rendezvouser)
	if !ok {
		if m.Key != "" {
			return errs.Usage("run the shards without --rendezvous (and start them together yourself)", "--rendezvous needs a database target the shards meet at")
		}
		return nil
	}
	off, rtt, err := rz.ServerClock(ctx)
	if err != nil {
		return err
	}
	rec.ClockOffsetMs, rec.RoundTripMs = float64(off)/1e6, float64(rtt)/1e6
	if m.Key == "" {
		return nil
	}
	sh := m.Shard
	jctx, cancel := context.WithTimeout(ctx, m.Timeout)
	defer cancel()
	last, err := rz.Join(jctx, m.Key, sh.Index, sh.Count, func(n int) {
		m.Note("shard %s: %d of %d shards at the rendezvous %q", sh, n, sh.Count, m.Key)
	})
	if err != nil {
		if ctx.Err() != nil {
			return interruptedAtBarrier(ctx)
		}
		if jctx.Err() != nil {
			return errs.Wrap(errs.KindConnect, err, "start the missing shards, or a longer --rendezvous-timeout", "the rendezvous timed out after %s", m.Timeout)
		}
		return err
	}
	start := last.Add(startLead)
	rec.Rendezvous, rec.StartAt = m.Key, start.UTC()
	m.Note("shard %s: all %d joined; starting at %s on the server's clock (this machine's clock is %+.1f ms from it, read over a %.1f ms round trip)",
		sh, sh.Count, start.UTC().Format("15:04:05.000"), -rec.ClockOffsetMs, rec.RoundTripMs)
	timer := time.NewTimer(time.Until(start.Add(-off)))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return interruptedAtBarrier(ctx)
	case <-timer.C:
		return nil
	}
}

// interruptedAtBarrier is the error of a shard interrupted while it waited
// for the others: nothing was measured (exit 130, as an interrupted run).
func interruptedAtBarrier(ctx context.Context) error {
	return errs.Wrap(errs.KindInterrupted, ctx.Err(), "", "interrupted while waiting for the other shards; nothing was measured or stored")
}
