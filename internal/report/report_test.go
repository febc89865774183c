package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/target"
	targets "github.com/tunebench/tunebench/internal/target/all"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload/all"
)

// writeFixtureReport builds the synthetic experiment's report.
func writeFixtureReport(t *testing.T, o Options) (*Report, string) {
	t.Helper()
	st := openTempStore(t)
	buildFixture(t, st)
	if o.Experiment == "" && len(o.RunIDs) == 0 {
		o.Experiment = "sweep"
	}
	o.Now = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	o.Version = "test"
	o.Registry = all.Registry()
	o.Charts = target.ChartsOf(targets.Drivers())
	r, err := Build(context.Background(), st, o)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	return r, buf.String()
}

func TestReportFromExperiment(t *testing.T) {
	r, html := writeFixtureReport(t, Options{})

	for _, want := range []string{
		`id="experiment"`, `id="environment"`, `id="throughput"`, `id="latency"`, `id="comparison"`, `id="timeseries"`, `id="runs"`,
		"Experiment sweep", "shared_buffers sweep (synthetic)", "NOPM vs vusers",
		"AMD EPYC 7B13", "ext4 on /dev/sda1", "rw,relatime", "PostgreSQL 17.2",
		// the varied setting is shown as differing, with its runs
		`<tr class="differs"><th>shared_buffers</th>`,
		// latency per transaction type
		"<h3>new_order</h3>", "<h3>stock_level</h3>",
		// comparison verdicts: 1GB is the same at 4 vusers, 30% faster above
		"within noise", `class="good">higher`,
		"Throughput per second", "CPU (whole machine)", "Wait events", "checkpoint",
		"no: warm-up run", "no: interrupted",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}

	// One <svg> per chart, and every chart has drawn data.
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(html, -1)
	if len(svgs) != r.ChartCount() || len(svgs) < 10 {
		t.Fatalf("%d <svg> elements, report counts %d charts", len(svgs), r.ChartCount())
	}
	for i, s := range svgs {
		if !strings.Contains(s, "<path") || !strings.Contains(s, "<text") {
			t.Errorf("chart %d has no drawing or no labels", i)
		}
	}
	// Offline: nothing to fetch.
	for _, bad := range []string{"<script", "<link", "src=", "@import", "url(", `href="http`} {
		if strings.Contains(html, bad) {
			t.Errorf("report contains %q", bad)
		}
	}
	if strings.Contains(html, "<?xml") {
		t.Error("inline SVG keeps its XML prolog")
	}

	// Medians and bands: 1GB at 8 vusers has 3 repetitions around
	// fixtureNOPM(1, 8, 2).
	g := findGroup(t, r, "nopm")
	if g.Baseline != fixtureConfigs[0] {
		t.Errorf("baseline %q, want the plan's %q", g.Baseline, fixtureConfigs[0])
	}
	var found bool
	for _, row := range g.Rows {
		if row.Config == fixtureConfigs[1] && row.X == "8" {
			found = true
			if row.N != 3 || row.Median != fmtNum(fixtureNOPM(1, 8, 2)) || row.Min != fmtNum(fixtureNOPM(1, 8, 1)) || row.Max != fmtNum(fixtureNOPM(1, 8, 3)) {
				t.Errorf("1GB at 8: %+v", row)
			}
		}
		if row.N != 3 {
			t.Errorf("row %+v: warm-up or interrupted runs counted", row)
		}
	}
	if !found {
		t.Error("no row for 1GB at 8 vusers")
	}
	if len(g.Compare) != len(fixtureX) {
		t.Fatalf("%d comparison rows, want %d", len(g.Compare), len(fixtureX))
	}
	for _, c := range g.Compare {
		want := "higher"
		if c.X == "4" {
			want = "within noise"
		}
		if c.Verdict != want {
			t.Errorf("comparison at %s: %q (ratio %s CI %s), want %q", c.X, c.Verdict, c.Ratio, c.CI, want)
		}
	}
	// Time series: one representative run per configuration and x, then
	// the interrupted run (its status is not ok).
	if len(r.Series) != len(fixtureConfigs)*len(fixtureX)+1 || r.Series[len(r.Series)-1].Run.Run.Status != store.StatusInterrupted {
		t.Errorf("%d runs with time series, want %d and the interrupted one", len(r.Series), len(fixtureConfigs)*len(fixtureX))
	}

	if dir := os.Getenv("TUNEBENCH_REPORT_OUT"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "report.html"), []byte(html), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func findGroup(t *testing.T, r *Report, metric string) groupView {
	t.Helper()
	for _, g := range r.Groups {
		if g.Metric == metric {
			return g
		}
	}
	t.Fatalf("no %s group", metric)
	return groupView{}
}

func TestReportBaselineFlag(t *testing.T) {
	r, html := writeFixtureReport(t, Options{Baseline: fixtureConfigs[1]})
	g := findGroup(t, r, "nopm")
	if g.Baseline != fixtureConfigs[1] {
		t.Fatalf("baseline %q", g.Baseline)
	}
	if !strings.Contains(html, `class="bad">lower`) {
		t.Error("against the faster baseline the other configuration is lower")
	}

	st := openTempStore(t)
	buildFixture(t, st)
	_, err := Build(context.Background(), st, Options{Experiment: "sweep", Baseline: "nope"})
	if errs.KindOf(err) != errs.KindUsage || !strings.Contains(errs.HintOf(err), fixtureConfigs[0]) {
		t.Errorf("unknown baseline: %v (hint %q)", err, errs.HintOf(err))
	}
}

func TestReportFromRunIDs(t *testing.T) {
	// Runs of an experiment keep their configuration when listed by id.
	r, html := writeFixtureReport(t, Options{RunIDs: []int64{2, 3, 4, 12, 13, 14}})
	if r.Exp != nil || !strings.Contains(html, "Runs selected") || !strings.Contains(html, "2-4, 12-14") {
		t.Error("a list of runs is described as such")
	}
	g := findGroup(t, r, "nopm")
	if len(g.Rows) != 2 || g.Rows[0].Config != fixtureConfigs[0] || g.Rows[1].Config != fixtureConfigs[1] {
		t.Errorf("rows %+v", g.Rows)
	}
	if len(r.Series) != 6 {
		t.Errorf("%d runs with series, want all 6", len(r.Series))
	}
}

func TestReportEmptyAndMissing(t *testing.T) {
	st := openTempStore(t)
	if _, err := Build(context.Background(), st, Options{Experiment: "nope"}); errs.KindOf(err) != errs.KindUsage {
		t.Errorf("missing experiment: %v", err)
	}
	if _, err := Build(context.Background(), st, Options{RunIDs: []int64{99}}); errs.KindOf(err) != errs.KindUsage {
		t.Errorf("missing run: %v", err)
	}
}

func TestReportAdHocRunsEscapedAndSingleX(t *testing.T) {
	st := openTempStore(t)
	ctx := context.Background()
	var ids []int64
	for i, tps := range []float64{1000, 1040, 1300} {
		settings := `{}`
		if i == 2 {
			settings = `{"application_name":"<script>alert(1)</script>"}`
		}
		sum := `{"workload":"tpcb","script":"select-only","status":"ok","clients":8,"tps":` + strconv.FormatFloat(tps, 'f', -1, 64) + `,"settings_applied":` + settings +
			`,"latency_ms":{"avg":1,"p50":0.9,"p90":1.5,"p95":2,"p99":3,"max":10}}`
		r := &store.Run{Workload: "tpcb", Variant: "select-only", Status: store.StatusOK, Summary: json.RawMessage(sum),
			Series: []store.Point{{Series: "tps", T: 1, V: tps}, {Series: "tps", T: 2, V: tps}}}
		id, err := st.SaveRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	r, err := Build(ctx, st, Options{RunIDs: ids, Registry: all.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if strings.Contains(html, "<script>") {
		t.Error("a setting value reached the page unescaped")
	}
	if !strings.Contains(html, "&lt;script&gt;") {
		t.Error("the escaped setting value is missing")
	}
	g := findGroup(t, r, "tps")
	if len(g.Rows) != 2 || g.Rows[0].N != 2 || g.Rows[0].Median != "1,020" {
		t.Errorf("rows %+v", g.Rows)
	}
	if len(g.Compare) != 1 || g.Compare[0].Verdict != "no CI (needs 2+ repetitions each)" {
		t.Errorf("comparison %+v", g.Compare)
	}
	if os.Getenv("TUNEBENCH_REPORT_OUT") != "" {
		os.WriteFile(filepath.Join(os.Getenv("TUNEBENCH_REPORT_OUT"), "adhoc.html"), buf.Bytes(), 0o644)
	}
}

// storageSummary is a stored storage run's summary (docs/storage.md).
func storageSummaryJSON(scale float64) string {
	dir := func(mbs, iops, lat float64) string {
		return `{"bw_bytes":` + strconv.FormatFloat(mbs*1e6, 'f', 0, 64) + `,"mb_s":` + strconv.FormatFloat(mbs, 'f', 1, 64) +
			`,"iops":` + strconv.FormatFloat(iops, 'f', 0, 64) + `,"io_bytes":1,"ios":1,"runtime_s":10,"clat_ms":{"mean":` +
			strconv.FormatFloat(lat, 'f', 3, 64) + `,"p50":0.2,"p95":0.9,"p99":1.5,"p99_9":4,"max":20}}`
	}
	return `{"workload":"storage","status":"ok","dir":"/mnt/test","fio_version":"fio-3.36","ioengine":"libaio","direct":true,
"block_size_bytes":8192,"size_bytes":1073741824,"jobs":4,"iodepth":16,"runtime_s":10,"drop_caches":{"requested":false,"done":false},
"tests":[{"name":"seq-read","read":` + dir(900*scale, 900*scale*128, 0.5) + `,"caches_dropped":false,"elapsed_s":11},
{"name":"rand-write","write":` + dir(60*scale, 60*scale*128, 1.1) + `,"caches_dropped":false,"elapsed_s":11},
{"name":"mix","read":` + dir(40*scale, 5000*scale, 0.8) + `,"write":` + dir(40*scale, 5000*scale, 1.3) + `,"caches_dropped":false,"elapsed_s":11}],
"interrupted":false}`
}

func TestReportStorageAndFsblog(t *testing.T) {
	st := openTempStore(t)
	ctx := context.Background()
	var ids []int64
	for i, fs := range []string{"ext4", "xfs"} {
		r := &store.Run{Workload: "storage", Variant: "standard", Status: store.StatusOK,
			Summary: json.RawMessage(storageSummaryJSON(1 + 0.2*float64(i))),
			Env:     json.RawMessage(`{"host":{"hostname":"lab"},"data_dir":{"path":"/mnt/test","fs_type":"` + fs + `","options":"rw,noatime"},"driver":{}}`)}
		id, err := st.SaveRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var pts []store.Point
	for i := 1; i <= 30; i++ {
		ft := float64(i * 10)
		for _, n := range []string{"blog_writes_s", "article_reads_s", "comment_writes_s"} {
			pts = append(pts, store.Point{Series: n, T: ft, V: 100 + float64(i)})
		}
		pts = append(pts, store.Point{Series: "read_mb_s", T: ft, V: 50}, store.Point{Series: "write_mb_s", T: ft, V: 20},
			store.Point{Series: "blogs", T: ft, V: float64(i * 7)})
	}
	r := &store.Run{Workload: "fsblog", Variant: "default", Status: store.StatusOK, Series: pts,
		Summary: json.RawMessage(`{"workload":"fsblog","status":"ok","dir":"/mnt/test","writers":3,"rewriters":1,"commenters":5,"readers":20,
"interval_s":10,"iterations":30,"fsync":false,"duration_s":300,"write_score":210,"read_score":98765,"blogs":210,"read_mb_s":50,"write_mb_s":20,
"rates_s":{"article_read":123.4},"latency_ms":{"article_read":{"count":1000,"mean":0.1,"p50":0.08,"p95":0.3,"p99":0.9,"p99_9":2,"max":5}},"errors":0}`)}
	id, err := st.SaveRun(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, id)

	rep, err := Build(ctx, st, Options{RunIDs: ids, Registry: all.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{"Storage baseline (fio)", "Bandwidth per test", "IOPS per test", "seq-read", "rand-write", "1,080", // 900 MB/s x 1.2
		"Filesystem workload (fsblog)", "98765", "article_read", "Operations per second, per interval"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if len(rep.Groups) != 0 || len(rep.Series) != 0 {
		t.Errorf("storage and fsblog runs have no throughput groups or per-run executor charts")
	}
	svgs := strings.Count(html, "<svg ")
	if svgs != rep.ChartCount() || svgs != 5 { // bandwidth, IOPS, 3 fsblog interval charts (scores need 2 runs)
		t.Errorf("%d <svg>, %d charts counted", svgs, rep.ChartCount())
	}
	if os.Getenv("TUNEBENCH_REPORT_OUT") != "" {
		os.WriteFile(filepath.Join(os.Getenv("TUNEBENCH_REPORT_OUT"), "storage.html"), buf.Bytes(), 0o644)
	}
}
