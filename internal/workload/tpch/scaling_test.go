package tpch

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/envelope"
	"github.com/tunebench/tunebench/internal/machine"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/testutil"
)

// TestLoadScaling is a benchmark, not a test (make bench-load-scaling;
// docs/benchmarks.md): a managed server (PostgreSQL's default settings)
// in a hardware envelope of 1 CPU and another in one of 2 CPUs, each
// loading SF (default 1) RUNS times (default 3), alternated, with the
// default --jobs (the server's CPUs, read from its cgroup), and the
// medians and the speed-up printed.
func TestLoadScaling(t *testing.T) {
	if os.Getenv("TUNEBENCH_LOAD_SCALING") != "1" {
		t.Skip("a benchmark: make bench-load-scaling")
	}
	sf, runs := 1.0, 3
	if v, err := strconv.ParseFloat(os.Getenv("SF"), 64); err == nil {
		sf = v
	}
	if v, err := strconv.Atoi(os.Getenv("RUNS")); err == nil {
		runs = v
	}
	type box struct {
		cpus  string
		srv   *server.Server
		jobs  int
		times []float64
	}
	var boxes []*box
	for _, cpus := range []string{"1", "2"} {
		e, err := envelope.Parse(envelope.Spec{Name: "load-" + cpus + "cpu", CPUs: cpus})
		if err != nil {
			t.Fatal(err)
		}
		g, err := envelope.Create(e)
		if err != nil {
			t.Fatal(err)
		}
		b := &box{cpus: cpus}
		b.srv = testutil.StartServer(t, func(o *server.Options) { o.Wrap, o.Config, o.NoSync = g.Command, nil, false })
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = b.srv.Stop(ctx, "fast")
			_ = g.Close()
		})
		pid, ok := postmasterPID(b.srv)
		if n, found := machine.ProcessCPUs(pid); ok && found {
			b.jobs = n
		}
		if b.jobs == 0 {
			t.Fatalf("cannot read the CPUs of the server in envelope %s", cpus)
		}
		boxes = append(boxes, b)
	}
	ctx := context.Background()
	for r := range runs {
		for _, b := range boxes {
			db := fmt.Sprintf("scaling_%d", r)
			admin := testutil.Connect(t, b.srv)
			if _, err := admin.Exec(ctx, "create database "+db); err != nil {
				t.Fatal(err)
			}
			if _, err := admin.Exec(ctx, "checkpoint"); err != nil {
				t.Fatal(err)
			}
			connect := func(ctx context.Context) (*pgx.Conn, error) { return b.srv.ConnectDB(ctx, db) }
			st, err := Load(ctx, connect, LoadOptions{Scale: sf, Workers: b.jobs}, nil)
			if err != nil {
				t.Fatal(err)
			}
			b.times = append(b.times, st.Total.Seconds())
			fmt.Fprintf(os.Stdout, "run %d  server in %s CPU(s), %d jobs: %.1f s (generate and COPY %.1f s, then keys %.1f s)\n",
				r+1, b.cpus, b.jobs, st.Total.Seconds(), st.Generate.Seconds(), st.Keys.Seconds())
			if _, err := admin.Exec(ctx, "drop database "+db); err != nil {
				t.Fatal(err)
			}
			admin.Close(ctx)
		}
	}
	med := func(v []float64) float64 { s := append([]float64{}, v...); sort.Float64s(s); return s[len(s)/2] }
	one, two := med(boxes[0].times), med(boxes[1].times)
	fmt.Fprintf(os.Stdout, "medians of %d runs, SF %g: 1 CPU %.1f s, 2 CPUs %.1f s: %.2fx faster with 2\n", runs, sf, one, two, one/two)
}

func postmasterPID(srv *server.Server) (int, bool) {
	b, err := os.ReadFile(srv.DataDir() + "/postmaster.pid")
	if err != nil {
		return 0, false
	}
	var pid int
	_, err = fmt.Sscan(string(b), &pid)
	return pid, err == nil
}
