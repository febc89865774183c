package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/redact"
)

// Storage (fio) and fsblog runs have no clients axis and no transactions:
// they get tables and charts of their own, across all such runs of the
// report (so that two filesystems or disks are side by side), and per run.
// Their summaries (docs/storage.md) are read leniently: a field another
// version does not write just shows as "-".

// otherView is the part of the report for one kind (storage or fsblog).
type otherView struct {
	ID     string // HTML anchor
	Title  string
	Intro  string
	Charts []namedChart
	Tables []objTable // across runs
	Runs   []otherRun
}

// otherRun is one storage or fsblog run.
type otherRun struct {
	Ref    string
	Fields []kv
	Tables []objTable
	Charts []namedChart
	Note   string
}

// objTable is a simple table.
type objTable struct {
	Name    string
	Left    int // leading text columns (the others are numbers, right-aligned)
	Columns []string
	Rows    [][]string
}

type fioLatency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

type fioDirection struct {
	MBps   float64    `json:"mb_s"`
	IOPS   float64    `json:"iops"`
	ClatMs fioLatency `json:"clat_ms"`
}

type storageSum struct {
	Dir          string  `json:"dir"`
	Device       bool    `json:"device"`
	FioVersion   string  `json:"fio_version"`
	IOEngine     string  `json:"ioengine"`
	IOEngineNote string  `json:"ioengine_note"`
	Direct       bool    `json:"direct"`
	BlockBytes   int64   `json:"block_size_bytes"`
	SizeBytes    int64   `json:"size_bytes"`
	Jobs         int     `json:"jobs"`
	IODepth      int     `json:"iodepth"`
	RuntimeS     float64 `json:"runtime_s"`
	JobFilePath  string  `json:"job_file_path"`
	DropCaches   struct {
		Requested bool   `json:"requested"`
		Done      bool   `json:"done"`
		Note      string `json:"note"`
	} `json:"drop_caches"`
	Tests []struct {
		Name          string        `json:"name"`
		Read          *fioDirection `json:"read"`
		Write         *fioDirection `json:"write"`
		Error         int           `json:"error"`
		CachesDropped bool          `json:"caches_dropped"`
		Interrupted   bool          `json:"interrupted"`
	} `json:"tests"`
	Interrupted bool   `json:"interrupted"`
	Error       string `json:"error"`
}

type fsblogLat struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

type fsblogSum struct {
	Dir        string               `json:"dir"`
	Writers    int                  `json:"writers"`
	Rewriters  int                  `json:"rewriters"`
	Commenters int                  `json:"commenters"`
	Readers    int                  `json:"readers"`
	IntervalS  float64              `json:"interval_s"`
	Iterations int                  `json:"iterations"`
	Fsync      bool                 `json:"fsync"`
	DurationS  float64              `json:"duration_s"`
	WriteScore *int64               `json:"write_score"`
	ReadScore  *int64               `json:"read_score"`
	Blogs      int64                `json:"blogs"`
	ReadMBs    float64              `json:"read_mb_s"`
	WriteMBs   float64              `json:"write_mb_s"`
	RatesS     map[string]float64   `json:"rates_s"`
	LatencyMs  map[string]fsblogLat `json:"latency_ms"`
	Errors     int64                `json:"errors"`
}

// otherSections builds the storage and fsblog parts and returns the number
// of charts drawn.
func otherSections(d *dataset) ([]otherView, int, error) {
	var storage, blog []*runData
	for _, rd := range d.Runs {
		switch rd.Kind {
		case kindStorage:
			storage = append(storage, rd)
		case kindFSBlog:
			blog = append(blog, rd)
		}
	}
	var out []otherView
	n := 0
	if len(storage) > 0 {
		v, err := storageView(storage)
		if err != nil {
			return nil, 0, err
		}
		n += len(v.Charts)
		out = append(out, v)
	}
	if len(blog) > 0 {
		v, err := fsblogView(blog)
		if err != nil {
			return nil, 0, err
		}
		n += len(v.Charts)
		for _, r := range v.Runs {
			n += len(r.Charts)
		}
		out = append(out, v)
	}
	return out, n, nil
}

func runLabel(rd *runData) string { return "run " + strconv.FormatInt(rd.Run.ID, 10) }

func storageView(runs []*runData) (otherView, error) {
	v := otherView{ID: "storage", Title: "Storage baseline (fio)",
		Intro: "Bandwidth (MB/s, 10^6 bytes per second), IOPS and completion latency (ms) per fio test, as fio measured them. Bars compare the runs test by test."}
	table := objTable{Left: 3, Columns: []string{"run", "test", "direction", "MB/s", "IOPS", "mean ms", "p50", "p95", "p99", "p99.9", "max", "caches dropped"}}
	type key struct{ test, dir string }
	var rowsOrder []key
	vals := map[key]map[int][2]float64{} // key -> run index -> MB/s, IOPS
	for ri, rd := range runs {
		var s storageSum
		decodeLenient(rd.Run.Summary, &s)
		r := otherRun{Ref: rd.ref()}
		add := func(k, val string) {
			if val != "" {
				r.Fields = append(r.Fields, kv{k, redact.Patterns(val)})
			}
		}
		target := s.Dir
		if s.Device {
			target += " (block device)"
		}
		add("Target", target)
		add("fio", s.FioVersion)
		add("I/O engine", joinNonEmpty(" ", s.IOEngine, paren(s.IOEngineNote)))
		add("Direct I/O", strconv.FormatBool(s.Direct))
		if s.BlockBytes > 0 {
			add("Block size", humanBytes(s.BlockBytes))
		}
		if s.SizeBytes > 0 {
			add("Size", humanBytes(s.SizeBytes))
		}
		if s.Jobs > 0 {
			add("Jobs, I/O depth", fmt.Sprintf("%d, %d", s.Jobs, s.IODepth))
		}
		if s.RuntimeS > 0 {
			add("Runtime per test", strconv.FormatFloat(s.RuntimeS, 'f', -1, 64)+" s")
		}
		add("Job file", s.JobFilePath)
		if s.DropCaches.Requested {
			add("Drop caches", joinNonEmpty(": ", map[bool]string{true: "done", false: "not done"}[s.DropCaches.Done], s.DropCaches.Note))
		}
		if s.Error != "" {
			r.Note = redact.Patterns(s.Error)
		}
		for _, t := range s.Tests {
			for _, dir := range []struct {
				name string
				d    *fioDirection
			}{{"read", t.Read}, {"write", t.Write}} {
				if dir.d == nil {
					continue
				}
				l := dir.d.ClatMs
				table.Rows = append(table.Rows, []string{runLabel(rd), redact.Patterns(t.Name), dir.name,
					fmtNum(dir.d.MBps), fmtNum(dir.d.IOPS), fmtMs(l.Mean), fmtMsOpt(l.P50), fmtMsOpt(l.P95), fmtMsOpt(l.P99), fmtMsOpt(l.P999), fmtMs(l.Max),
					strconv.FormatBool(t.CachesDropped)})
				k := key{t.Name, dir.name}
				if vals[k] == nil {
					vals[k] = map[int][2]float64{}
					rowsOrder = append(rowsOrder, k)
				}
				vals[k][ri] = [2]float64{dir.d.MBps, dir.d.IOPS}
			}
		}
		v.Runs = append(v.Runs, r)
	}
	if len(table.Rows) > 0 {
		v.Tables = append(v.Tables, table)
	}
	if len(rowsOrder) == 0 {
		return v, nil
	}
	cols := make([]string, len(runs))
	for i, rd := range runs {
		cols[i] = runLabel(rd)
		if rd.Env != nil && rd.Env.DataDir != nil && rd.Env.DataDir.FSType != "" {
			cols[i] += " (" + rd.Env.DataDir.FSType + ")"
		}
	}
	for m, what := range []struct{ title, unit string }{{"Bandwidth per test", "MB/s"}, {"IOPS per test", "I/O per second"}} {
		var rows []hbar
		for _, k := range rowsOrder {
			hb := hbar{Label: k.test + " " + k.dir}
			for ri := range runs {
				val := math.NaN()
				if x, ok := vals[k][ri]; ok {
					val = x[m]
				}
				hb.Values = append(hb.Values, val)
				hb.Lo = append(hb.Lo, math.NaN())
				hb.Hi = append(hb.Hi, math.NaN())
			}
			rows = append(rows, hb)
		}
		colNames := cols
		if len(runs) == 1 {
			// One run: colour the bars by test, and name the unit only.
			colNames = []string{what.unit}
			for i := range rows {
				rows[i].Color = i
			}
		}
		svg, err := hbarChart(what.title, what.unit, colNames, rows, false, math.NaN(), "")
		if err != nil {
			return v, err
		}
		if svg != "" {
			v.Charts = append(v.Charts, namedChart{what.title, svg})
		}
	}
	return v, nil
}

func fmtMsOpt(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmtMs(v)
}

func fsblogView(runs []*runData) (otherView, error) {
	v := otherView{ID: "fsblog", Title: "Filesystem workload (fsblog)",
		Intro: "blogbench-like scores (blogs written and read over the run: higher is better), throughput and latency per operation, and the rates of each interval."}
	table := objTable{Left: 1, Columns: []string{"run", "write score", "read score", "blogs", "seconds", "read MB/s", "write MB/s", "errors"}}
	var scoreRows []hbar
	for _, rd := range runs {
		var s fsblogSum
		decodeLenient(rd.Run.Summary, &s)
		score := func(p *int64) (string, float64) {
			if p == nil {
				return "-", math.NaN()
			}
			return strconv.FormatInt(*p, 10), float64(*p)
		}
		ws, wv := score(s.WriteScore)
		rs, rv := score(s.ReadScore)
		table.Rows = append(table.Rows, []string{runLabel(rd), ws, rs, strconv.FormatInt(s.Blogs, 10), fmtNum(s.DurationS),
			fmtNum(s.ReadMBs), fmtNum(s.WriteMBs), strconv.FormatInt(s.Errors, 10)})
		label := runLabel(rd)
		if rd.Env != nil && rd.Env.DataDir != nil && rd.Env.DataDir.FSType != "" {
			label += " (" + rd.Env.DataDir.FSType + ")"
		}
		nan := []float64{math.NaN(), math.NaN()}
		scoreRows = append(scoreRows, hbar{Label: label, Values: []float64{wv, rv}, Lo: nan, Hi: nan})

		r := otherRun{Ref: rd.ref()}
		add := func(k, val string) {
			if val != "" {
				r.Fields = append(r.Fields, kv{k, redact.Patterns(val)})
			}
		}
		add("Directory", s.Dir)
		add("Threads", fmt.Sprintf("%d writers, %d rewriters, %d commenters, %d readers", s.Writers, s.Rewriters, s.Commenters, s.Readers))
		if s.Iterations > 0 {
			add("Iterations", fmt.Sprintf("%d of %s s", s.Iterations, strconv.FormatFloat(s.IntervalS, 'f', -1, 64)))
		}
		add("fsync", strconv.FormatBool(s.Fsync))
		if len(s.LatencyMs) > 0 {
			lt := objTable{Name: "Latency per operation (ms)", Left: 1, Columns: []string{"operation", "count", "rate /s", "mean", "p50", "p95", "p99", "p99.9", "max"}}
			ops := make([]string, 0, len(s.LatencyMs))
			for op := range s.LatencyMs {
				ops = append(ops, op)
			}
			sort.Strings(ops)
			for _, op := range ops {
				l := s.LatencyMs[op]
				rate := "-"
				if x, ok := s.RatesS[op]; ok {
					rate = fmtNum(x)
				}
				lt.Rows = append(lt.Rows, []string{op, strconv.FormatInt(l.Count, 10), rate, fmtMs(l.Mean), fmtMs(l.P50), fmtMs(l.P95), fmtMs(l.P99), fmtMs(l.P999), fmtMs(l.Max)})
			}
			r.Tables = append(r.Tables, lt)
		}
		sm := seriesMap(rd)
		for _, def := range fsblogChartDefs(sm) {
			svg, err := seriesChart(def, sm)
			if err != nil {
				return v, err
			}
			if svg != "" {
				r.Charts = append(r.Charts, namedChart{def.Title, svg})
			}
		}
		if len(r.Charts) == 0 {
			r.Note = "No per-interval series stored for this run."
		}
		v.Runs = append(v.Runs, r)
	}
	v.Tables = append(v.Tables, table)
	if len(runs) < 2 {
		return v, nil // the table says it all
	}
	// The read score is typically orders of magnitude above the write
	// score: one chart each.
	for c, title := range []string{"fsblog write score", "fsblog read score"} {
		var rows []hbar
		for i, sr := range scoreRows {
			rows = append(rows, hbar{Label: sr.Label, Color: i, Values: sr.Values[c : c+1], Lo: sr.Lo[:1], Hi: sr.Hi[:1]})
		}
		svg, err := hbarChart(title+" (higher is better)", "blogs", []string{"score"}, rows, false, math.NaN(), "")
		if err != nil {
			return v, err
		}
		if svg != "" {
			v.Charts = append(v.Charts, namedChart{title, svg})
		}
	}
	return v, nil
}

// fsblogChartDefs are the per-interval charts of an fsblog run: operation
// rates and bytes.
func fsblogChartDefs(sm map[string][]XY) []runChartDef {
	ops := runChartDef{Title: "Operations per second, per interval", YLabel: "operations per second", Scale: 1}
	var names []string
	for n := range sm {
		if strings.HasSuffix(n, "_s") && !strings.HasSuffix(n, "_mb_s") && !strings.Contains(n, ".") && n != "tps" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		ops.Series = append(ops.Series, seriesDef{n, strings.ReplaceAll(strings.TrimSuffix(n, "_s"), "_", " ")})
	}
	mbs := runChartDef{Title: "Bytes per interval", YLabel: "MB/s", Scale: 1, Series: []seriesDef{{"read_mb_s", "read"}, {"write_mb_s", "write"}}}
	blogs := runChartDef{Title: "Blogs created (cumulative)", YLabel: "blogs", Scale: 1, Series: []seriesDef{{"blogs", "blogs"}}}
	return []runChartDef{ops, mbs, blogs}
}
