//go:build tpccbench

package tpcc

// A quick throughput harness for the transactions (not a test; the official
// figures come from `tunebench run tpcc`, see scripts/bench-tpcc.sh):
//
//	go test -tags tpccbench ./internal/workload/tpcc/ -run TestBenchTPCC -v -timeout 60m
//
// It starts a managed server with the benchmark settings (shared_buffers
// 2GB, max_wal_size 8GB, checkpoint_timeout 15min, durable otherwise),
// loads TPCC_BENCH_W warehouses (4) once into a template database, then for
// each repetition (TPCC_BENCH_REPEAT, 3) and mode (TPCC_BENCH_MODES, "procs
// sql") copies the template and runs TPCC_BENCH_VUSERS (4) virtual users on
// the direct transport (pg.Target.Connect) for TPCC_BENCH_RAMPUP (15s) plus
// TPCC_BENCH_DURATION (45s). It prints NOPM, TPM (completed transactions
// per minute, from the driver), the New-Order p95 and the driver's CPU
// milliseconds per 1,000 New-Orders, and the medians per mode. With
// TPCC_BENCH_QUIET=L each run first waits (up to 10 minutes) for the
// 1-minute load average to fall below L.

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	pgt "github.com/tunebench/tunebench/internal/target/pg"

	"github.com/jackc/pgx/v5"

	pgdrv "github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/redact"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/testutil"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/gen"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

type benchRun struct {
	mode                  string
	nopm, tpm, p95, cpuMs float64
	dbGrowth, committedNO int64
}

func TestBenchTPCC(t *testing.T) {
	wh := envInt("TPCC_BENCH_W", 4)
	vusers := envInt("TPCC_BENCH_VUSERS", 4)
	repeat := envInt("TPCC_BENCH_REPEAT", 3)
	rampup := envDuration("TPCC_BENCH_RAMPUP", 15*time.Second)
	duration := envDuration("TPCC_BENCH_DURATION", 45*time.Second)
	modes := strings.Fields(os.Getenv("TPCC_BENCH_MODES"))
	if len(modes) == 0 {
		modes = []string{ModeProcs, ModeSQL}
	}
	srv := testutil.StartServer(t, func(o *server.Options) {
		o.Config = []server.Setting{
			{Name: "shared_buffers", Value: "2GB"},
			{Name: "max_wal_size", Value: "8GB"},
			{Name: "checkpoint_timeout", Value: "15min"},
			{Name: "max_connections", Value: "100"},
		}
	})
	ctx := context.Background()
	admin := testutil.Connect(t, srv)
	const tmpl = "tpcc_bench_template"
	if _, err := admin.Exec(ctx, "create database "+tmpl); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := Load(ctx, func(ctx context.Context) (*pgx.Conn, error) { return srv.ConnectDB(ctx, tmpl) },
		LoadOptions{Warehouses: wh, Workers: 2, Seed: 1}, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %d warehouses in %.1f s", wh, time.Since(start).Seconds())
	// The template must have no connections when it is copied.
	var runs []benchRun
	quiet, _ := strconv.ParseFloat(os.Getenv("TPCC_BENCH_QUIET"), 64)
	for rep := 0; rep < repeat; rep++ {
		for _, mode := range modes {
			waitQuiet(t, quiet)
			r := benchOnce(t, srv, admin, tmpl, fmt.Sprintf("tpcc_bench_%d_%s", rep, mode), mode, wh, vusers, rampup, duration)
			runs = append(runs, r)
			load, _ := os.ReadFile("/proc/loadavg")
			t.Logf("rep %d %-5s: NOPM %7.0f  TPM %7.0f  NO p95 %.2f ms  driver CPU %.1f ms per 1,000 New-Orders  (district growth %d = committed %d; load %s)",
				rep, mode, r.nopm, r.tpm, r.p95, r.cpuMs, r.dbGrowth, r.committedNO, strings.Join(strings.Fields(string(load))[:3], " "))
		}
	}
	for _, mode := range modes {
		var nopm, cpu []float64
		for _, r := range runs {
			if r.mode == mode {
				nopm, cpu = append(nopm, r.nopm), append(cpu, r.cpuMs)
			}
		}
		t.Logf("median %-5s (%d runs): NOPM %.0f (min %.0f, max %.0f), driver CPU %.1f ms per 1,000 New-Orders",
			mode, len(nopm), median(nopm), minOf(nopm), maxOf(nopm), median(cpu))
	}
}

func benchOnce(t *testing.T, srv *server.Server, admin *pgx.Conn, tmpl, db, mode string, wh, vusers int, rampup, duration time.Duration) benchRun {
	ctx := context.Background()
	if _, err := admin.Exec(ctx, "create database "+db+" template "+tmpl+" strategy file_copy"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = admin.Exec(ctx, "drop database if exists "+db+" with (force)") }()
	_, _ = admin.Exec(ctx, "checkpoint")
	target, err := pgdrv.ParseTarget(srv.DSNFor(db), "", redact.New())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := target.ConnectStd(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if mode == ModeProcs {
		if err := InstallProcs(ctx, conn); err != nil {
			t.Fatal(err)
		}
	}
	info, err := ReadInfo(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	o := RunOptions{Warehouses: info.Warehouses, VUsers: vusers, Mode: mode, Isolation: "read-committed", MaxTries: 10,
		Constants: NewRunConstants(gen.NewRand(time.Now().UnixNano(), 1<<40), info.Load), Seed: time.Now().UnixNano()}
	var before, after int64
	readNext := func(dst *int64) func() {
		return func() {
			if err := conn.QueryRow(context.Background(), "select sum(d_next_o_id) from district").Scan(dst); err != nil {
				t.Error(err)
			}
		}
	}
	res, err := run.Execute(ctx, run.Config{Workers: vusers, Duration: duration, Warmup: rampup, Seed: 1,
		OnMeasureStart: readNext(&before), OnMeasureEnd: readNext(&after)},
		func(ctx context.Context, id int) (workload.Worker, error) {
			return NewWorker(ctx, pgt.Sessions{Connect: target.Connect}, o, id, nil)
		})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors > 0 {
		t.Logf("%s: %d errors %v", mode, res.Errors, res.SQLStates)
	}
	var committedNO, completed int64
	var p95 float64
	for _, op := range res.Ops {
		if op.Class.Completed() {
			completed += op.Count
		}
		if op.Op == OpNewOrder && op.Class.Committed() {
			committedNO += op.Count
			if op.Class == workload.ClassOK {
				p95 = op.Latency.PercentilesMs(95)[0]
			}
		}
	}
	min := res.MeasuredSeconds / 60
	return benchRun{mode: mode, nopm: float64(committedNO) / min, tpm: float64(completed) / min, p95: p95,
		cpuMs: res.DriverCPUSeconds * 1000 / float64(committedNO) * 1000, dbGrowth: after - before, committedNO: committedNO}
}

// waitQuiet waits up to 10 minutes for the 1-minute load average to fall
// below limit (0: no wait): the machine is shared.
func waitQuiet(t *testing.T, limit float64) {
	if limit <= 0 {
		return
	}
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Second) {
		b, err := os.ReadFile("/proc/loadavg")
		if err != nil {
			return
		}
		if l, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64); err != nil || l < limit {
			return
		}
	}
	t.Logf("the load average stayed above %.1f", limit)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
