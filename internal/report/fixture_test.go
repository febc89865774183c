package report

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/store"
)

// The fixture is a synthetic results store shaped like a real TPC-C sweep:
// two configurations (shared_buffers) x three vuser counts x three
// repetitions, one warm-up run per configuration, one interrupted run, every
// run with its summary, environment, series and histograms.

var fixtureConfigs = []string{"shared_buffers=128MB", "shared_buffers=1GB"}
var fixtureX = []float64{4, 8, 16}

const fixtureReps = 3

func openTempStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func fixturePlan() json.RawMessage {
	plan := map[string]any{
		"version": 1, "name": "sweep", "description": "shared_buffers sweep (synthetic)", "workload": "tpcc", "metric": "nopm",
		"x_axis": "vusers", "x_values": fixtureX, "seed": 42, "order": "random", "reset": "template", "reset_every": "configuration",
		"repetitions": fixtureReps, "warmup_runs": 1, "cooldown_s": 5, "target": "managed", "database": "tunebench_exp",
		"base_settings": []map[string]string{{"name": "max_wal_size", "value": "4GB"}},
		"dimensions": []map[string]any{
			{"name": "shared_buffers", "kind": "setting", "values": []string{"128MB", "1GB"}},
			{"name": "vusers", "kind": "option", "values": []string{"4", "8", "16"}, "x_axis": true},
		},
		"baseline":       fixtureConfigs[0],
		"configurations": []map[string]any{{"index": 0, "label": fixtureConfigs[0], "baseline": true}, {"index": 1, "label": fixtureConfigs[1]}},
		"runs":           make([]map[string]any, len(fixtureConfigs)*(len(fixtureX)*fixtureReps+1)),
		"estimate":       map[string]any{"total_s": 2400},
	}
	b, _ := json.Marshal(plan)
	return b
}

func fixtureEnv(sharedBuffers string) json.RawMessage {
	s := envinfo.Snapshot{
		Host: envinfo.Host{Hostname: "lab1", OS: "linux", Distro: "Debian GNU/Linux 13 (trixie)", Arch: "amd64",
			Kernel: "6.12.0-1-amd64", CPUModel: "AMD EPYC 7B13", CPUs: 2, CPUCores: 1, CPUSockets: 1, Hypervisor: true,
			MemTotalBytes: 8 << 30, Clocksource: "kvm-clock", TransparentHuge: "madvise"},
		DataDir: &envinfo.FS{Path: "/var/tmp/tb/data", MountPoint: "/", FSType: "ext4", Source: "/dev/sda1",
			Options: "rw,relatime", SuperOptions: "rw,errors=remount-ro"},
		Postgres: &envinfo.Postgres{Version: "PostgreSQL 17.2 on x86_64-pc-linux-gnu", ServerVersionNum: 170002, Database: "tunebench_exp",
			Settings: map[string]string{"shared_buffers": sharedBuffers, "max_wal_size": "4GB", "password_encryption": "scram-sha-256"}},
		Driver:  envinfo.Driver{GoVersion: "go1.26.0", TunebenchVersion: "test", GOMAXPROCS: 2, NumCPU: 2},
		TakenAt: time.Unix(1700000000, 0).UTC(),
	}
	b, _ := json.Marshal(s)
	return b
}

var fixtureOps = []struct {
	name   string
	share  float64
	baseMs float64
}{{"new_order", 0.45, 4}, {"payment", 0.43, 2}, {"delivery", 0.04, 12}, {"order_status", 0.04, 1.5}, {"stock_level", 0.04, 6}}

// fixtureRun builds a tpcc run with throughput nopm at x vusers.
func fixtureRun(rng *rand.Rand, cfg string, x, nopm float64, start time.Time, withSamplers bool) *store.Run {
	const dur = 120
	tps := nopm / 60 / 0.45
	var per []map[string]any
	var hists []store.Histogram
	for _, op := range fixtureOps {
		h := metrics.NewHist()
		n := int(tps * op.share * dur / 10)
		for range n {
			// log-normal-ish latencies around baseMs growing with x
			v := op.baseMs * (1 + x/16) * math.Exp(rng.NormFloat64()*0.5)
			h.RecordMicros(int64(v * 1000))
		}
		enc, err := metrics.Encode(h)
		if err != nil {
			panic(err)
		}
		hists = append(hists, store.Histogram{Op: op.name, Class: "ok", Kind: store.KindLatency, Encoded: enc})
		p := h.PercentilesMs(50, 90, 95, 99)
		per = append(per, map[string]any{"op": op.name, "count": h.Count(), "min_ms": h.MinMs(), "avg_ms": h.MeanMs(), "max_ms": h.MaxMs(),
			"stddev_ms": h.StdDevMs(), "p50_ms": p[0], "p90_ms": p[1], "p95_ms": p[2], "p99_ms": p[3], "total_s": h.MeanMs() * float64(h.Count()) / 1000})
	}
	sum := map[string]any{
		"workload": "tpcc", "status": "ok", "clients": int(x), "vusers": int(x), "warehouses": 4, "mode": "procs",
		"duration_s": dur, "tps": tps, "nopm": nopm, "tpm": tps * 60 * 1.01,
		"latency_ms": map[string]any{"avg": 3.1 * (1 + x/16), "p50": 2.5 * (1 + x/16), "p90": 6 * (1 + x/16), "p95": 8 * (1 + x/16) * (1 + 0.05*rng.NormFloat64()), "p99": 14 * (1 + x/16), "max": 80},
		"errors":     0, "errors_by_sqlstate": map[string]int{}, "per_transaction": per,
		"driver": map[string]any{"cpu_s": 3.5},
	}
	sb, _ := json.Marshal(sum)

	var pts []store.Point
	add := func(name string, t, v float64) { pts = append(pts, store.Point{Series: name, T: t, V: v}) }
	checkpoints := 0.0
	for t := 1; t <= dur; t++ {
		ft := float64(t)
		dip := 1.0
		if t%50 > 45 { // a checkpoint slows things down
			dip = 0.8
		}
		cur := nopm * dip * (1 + 0.04*rng.NormFloat64())
		add("nopm", ft, cur)
		add("tps", ft, cur/60/0.45)
		add("latency_p50_ms", ft, 2.5*(1+x/16)/dip)
		add("latency_p95_ms", ft, 8*(1+x/16)/dip)
		add("latency_p99_ms", ft, 14*(1+x/16)/dip)
		add("latency_max_ms", ft, 30*(1+x/16)/dip*(1+rng.Float64()))
		add("errors", ft, 0)
		add("active_workers", ft, x)
		if !withSamplers {
			continue
		}
		add("sys.cpu_user_pct", ft, 55+5*rng.NormFloat64())
		add("sys.cpu_system_pct", ft, 15+2*rng.NormFloat64())
		add("sys.cpu_iowait_pct", ft, 4+rng.Float64())
		add("sys.cpu_steal_pct", ft, 1)
		add("pg.proc_cpu_pct", ft, 120+10*rng.NormFloat64())
		add("driver.cpu_pct", ft, 20+3*rng.NormFloat64())
		add("disk.read_bytes_s", ft, 2e6*rng.Float64())
		add("disk.write_bytes_s", ft, 30e6+5e6*rng.NormFloat64())
		add("disk.read_iops", ft, 100*rng.Float64())
		add("disk.write_iops", ft, 1500+100*rng.NormFloat64())
		add("disk.await_ms", ft, 0.8+0.1*rng.NormFloat64())
		add("pg.wal_bytes_s", ft, 12e6+1e6*rng.NormFloat64())
		add("pg.buffers_checkpoint_s", ft, 200*(1-dip)*10)
		add("pg.commits_s", ft, cur/60/0.45)
		add("pg.rollbacks_s", ft, cur/60/0.45*0.01)
		add("sys.mem_used_bytes", ft, 3e9)
		add("sys.page_cache_bytes", ft, 2e9+ft*1e6)
		add("net.lo_bytes_s", ft, 5e6)
		if t%50 == 46 {
			checkpoints++
		}
		add("pg.checkpoints", ft, checkpoints)
		add("wait.CPU", ft, x*0.5)
		add("wait.LWLock.WALWrite", ft, x*0.2*(2-dip))
		add("wait.IO.DataFileRead", ft, x*0.05)
		add("wait.Lock.transactionid", ft, x*0.1)
		add("driver.gc_pause_ms", ft, 0.2*rng.Float64())
	}
	var sbv = "128MB"
	if cfg == fixtureConfigs[1] {
		sbv = "1GB"
	}
	return &store.Run{
		Experiment: "sweep", Workload: "tpcc", Variant: "procs", Status: store.StatusOK,
		StartedAt: start, EndedAt: start.Add(dur * time.Second),
		Params: json.RawMessage(`{"vusers":` + fmtX(x) + `}`), Env: fixtureEnv(sbv), Summary: sb,
		Series: pts, Histograms: hists,
	}
}

// fixtureNOPM is the synthetic throughput: the 1GB configuration is 30%
// faster at 8 and 16 vusers and the same at 4.
func fixtureNOPM(cfg int, x float64, rep int) float64 {
	base := 3000 * x / (1 + x/12)
	if cfg == 1 && x > 4 {
		base *= 1.3
	}
	return base * (1 + 0.04*float64(rep-2))
}

// buildFixture writes the synthetic experiment into st and returns the ids
// of its counted runs per configuration and x.
func buildFixture(t testing.TB, st *store.Store) {
	ctx := context.Background()
	e := &store.Experiment{Name: "sweep", Spec: "name: sweep\nworkload: {name: tpcc}\nmatrix:\n  settings: {shared_buffers: [128MB, 1GB]}\n  vusers: [4, 8, 16]\nrepetitions: 3\n",
		Plan: fixturePlan(), StartedAt: time.Unix(1700000000, 0)}
	if _, err := st.CreateExperiment(ctx, e); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	idx := 0
	start := time.Unix(1700000000, 0)
	for ci, cfg := range fixtureConfigs {
		// warm-up
		r := fixtureRun(rng, cfg, 16, fixtureNOPM(ci, 16, 2)*0.7, start, false)
		r.Link = &store.PlanLink{ExperimentID: e.ID, PlanIndex: idx, Config: cfg, XName: "vusers", XValue: 16, Repetition: 1, Warmup: true}
		if _, err := st.SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		idx++
		start = start.Add(3 * time.Minute)
		for _, x := range fixtureX {
			for rep := 1; rep <= fixtureReps; rep++ {
				r := fixtureRun(rng, cfg, x, fixtureNOPM(ci, x, rep), start, rep == 2 || x == 16)
				r.Link = &store.PlanLink{ExperimentID: e.ID, PlanIndex: idx, Config: cfg, XName: "vusers", XValue: x, Repetition: rep}
				if _, err := st.SaveRun(ctx, r); err != nil {
					t.Fatal(err)
				}
				idx++
				start = start.Add(3 * time.Minute)
			}
		}
	}
	// An interrupted extra run: stored, shown, not counted.
	r := fixtureRun(rng, fixtureConfigs[1], 4, 100, start, false)
	r.Status = store.StatusInterrupted
	r.Link = &store.PlanLink{ExperimentID: e.ID, PlanIndex: idx, Config: fixtureConfigs[1], XName: "vusers", XValue: 4, Repetition: 4}
	if _, err := st.SaveRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := st.SetExperimentStatus(ctx, e.ID, store.ExpDone, start.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
}

// The runs addStatusErrorsRun adds: run 22, an extra repetition of the
// 1GB configuration at 8 vusers that lost its connections from 6 to 20 s
// after the measurement start and ended with status errors for that
// outage; run 23, one with status errors for a few failed transactions.
const (
	errorsRunID  = 22 // after the 21 runs of buildFixture
	errorsReason = "outage of 14.0 s is over 5% of the 120 s window"
	benignReason = "3 transactions ended in errors, 0.01% (within the 1% that --max-errors-pct accepts)"
)

// addStatusErrorsRun stores that run in the fixture's experiment.
func addStatusErrorsRun(t testing.TB, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	e, err := st.GetExperiment(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	r := fixtureRun(rng, fixtureConfigs[1], 8, fixtureNOPM(1, 8, 2)*0.3, time.Unix(1700009000, 0), true)
	var sum map[string]any
	if err := json.Unmarshal(r.Summary, &sum); err != nil {
		t.Fatal(err)
	}
	sum["status"] = store.StatusErrors
	sum["errors"] = 1234
	sum["errors_pct"] = 2.5
	sum["outages"] = []map[string]any{{"start_s": 6.0, "end_s": 20.0, "errors": 1234}}
	sum["status_reasons"] = []map[string]string{{"code": "outage", "detail": errorsReason}}
	if r.Summary, err = json.Marshal(sum); err != nil {
		t.Fatal(err)
	}
	for i, p := range r.Series {
		if p.T > 6 && p.T <= 20 {
			switch p.Series {
			case "nopm", "tps", "pg.commits_s":
				r.Series[i].V = 0
			case "errors":
				r.Series[i].V = 88
			}
		}
	}
	r.Status = store.StatusErrors
	r.Link = &store.PlanLink{ExperimentID: e.ID, PlanIndex: 21, Config: fixtureConfigs[1], XName: "vusers", XValue: 8, Repetition: 4}
	id, err := st.SaveRun(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if id != errorsRunID {
		t.Fatalf("the run with status errors is run %d, want %d", id, errorsRunID)
	}

	// Run 23: a fourth repetition of 128MB at 4 vusers with status errors
	// for a few failed transactions, which leave its figures valid: it
	// counts. Its throughput is the median's, so the median stays.
	r = fixtureRun(rng, fixtureConfigs[0], 4, fixtureNOPM(0, 4, 2), time.Unix(1700009300, 0), false)
	sum = nil
	if err := json.Unmarshal(r.Summary, &sum); err != nil {
		t.Fatal(err)
	}
	sum["status"], sum["errors"], sum["errors_pct"] = store.StatusErrors, 3, 0.01
	sum["status_reasons"] = []map[string]string{{"code": "errors", "detail": benignReason}}
	if r.Summary, err = json.Marshal(sum); err != nil {
		t.Fatal(err)
	}
	r.Status = store.StatusErrors
	r.Link = &store.PlanLink{ExperimentID: e.ID, PlanIndex: 22, Config: fixtureConfigs[0], XName: "vusers", XValue: 4, Repetition: 4}
	if id, err = st.SaveRun(ctx, r); err != nil || id != errorsRunID+1 {
		t.Fatalf("the run with a few errors: run %d, %v", id, err)
	}
}
