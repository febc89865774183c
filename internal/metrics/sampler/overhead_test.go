package sampler_test

// Benchmarks of one Sample of each sampler on this machine's /proc and a
// test PostgreSQL server: the cost per call times the calls per second
// (1/s, the wait-event sampler 10/s) is the samplers' CPU overhead, which
// docs/metrics.md reports.
//
//	go test -run '^$' -bench . -benchtime 200x ./internal/metrics/sampler/

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/metrics/pgstat"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/metrics/system"
	"github.com/tunebench/tunebench/internal/testutil"
)

func benchSample(b *testing.B, s sampler.Sampler) {
	b.Helper()
	ctx := context.Background()
	if _, err := s.Sample(ctx, time.Now()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Sample(ctx, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if f, ok := s.(sampler.Flusher); ok {
		f.Flush(time.Now())
	}
	if c, ok := s.(sampler.Closer); ok {
		_ = c.Close()
	}
}

func BenchmarkSample(b *testing.B) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		b.Skip("no /proc")
	}
	b.Run("host", func(b *testing.B) { benchSample(b, &system.Host{Src: system.Local{}}) })
	b.Run("driver", func(b *testing.B) { benchSample(b, &system.Driver{}) })
	if d, _, err := system.DeviceForPath(os.TempDir()); err == nil {
		b.Run("disk", func(b *testing.B) { benchSample(b, &system.Disk{Src: system.Local{}, Device: d.Name}) })
	}

	srv := testutil.StartServer(b)
	b.Run("pg-processes", func(b *testing.B) {
		benchSample(b, &system.PGProcs{Proc: "/proc", Postmaster: func() (int, error) { return system.ReadPostmasterPID(srv.DataDir()) }})
	})
	b.Run("pg-stats", func(b *testing.B) { benchSample(b, pgstat.NewStats(srv.Connect, "")) })
	b.Run("pg-wait-events", func(b *testing.B) { benchSample(b, pgstat.NewWaits(srv.Connect)) })
}
