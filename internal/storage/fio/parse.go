package fio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Output is the part of fio's --output-format=json document tunebench reads
// (fio 3.x; the json+ format is a superset and parses too).
type Output struct {
	Version     string `json:"fio version"` // e.g. "fio-3.33"
	Timestamp   int64  `json:"timestamp"`
	TimestampMs int64  `json:"timestamp_ms"`
	Time        string `json:"time"`
	Jobs        []Job  `json:"jobs"`
	DiskUtil    []Disk `json:"disk_util"`
}

// Job is one entry of "jobs": one job, or one reporting group with
// group_reporting (then named after the group's first job).
type Job struct {
	Name     string            `json:"jobname"`
	GroupID  int               `json:"groupid"`
	Error    int               `json:"error"`
	Elapsed  int64             `json:"elapsed"` // seconds
	Options  map[string]string `json:"job options"`
	Read     IO                `json:"read"`
	Write    IO                `json:"write"`
	Trim     IO                `json:"trim"`
	RuntimeM int64             `json:"job_runtime"` // milliseconds, summed over the group's jobs
	UsrCPU   float64           `json:"usr_cpu"`     // percent
	SysCPU   float64           `json:"sys_cpu"`     // percent
}

// IO is one direction of a job.
type IO struct {
	IOBytes   int64   `json:"io_bytes"`
	BWBytes   float64 `json:"bw_bytes"` // bytes per second
	BWKiB     float64 `json:"bw"`       // KiB per second
	IOPS      float64 `json:"iops"`
	RuntimeMs int64   `json:"runtime"`
	TotalIOs  int64   `json:"total_ios"`
	Slat      Lat     `json:"slat_ns"`
	Clat      Lat     `json:"clat_ns"`
	Lat       Lat     `json:"lat_ns"`
}

// Lat is a latency distribution in nanoseconds. Percentile is keyed by fio's
// formatted percentages ("99.900000"); use Pct to look one up.
type Lat struct {
	Min        float64            `json:"min"`
	Max        float64            `json:"max"`
	Mean       float64            `json:"mean"`
	Stddev     float64            `json:"stddev"`
	N          int64              `json:"N"`
	Percentile map[string]float64 `json:"percentile"`
}

// Disk is one entry of "disk_util".
type Disk struct {
	Name     string  `json:"name"`
	Util     float64 `json:"util"` // percent
	ReadIOs  int64   `json:"read_ios"`
	WriteIOs int64   `json:"write_ios"`
}

// Pct returns the p-th percentile (0-100) in nanoseconds and whether fio
// reported it.
func (l Lat) Pct(p float64) (float64, bool) {
	for k, v := range l.Percentile {
		f, err := strconv.ParseFloat(k, 64)
		if err == nil && math.Abs(f-p) < 1e-6 {
			return v, true
		}
	}
	return 0, false
}

// Parse reads fio's JSON output. fio may print lines before the document
// (for example "fio: terminating on signal 2" after an interrupt, or
// warnings): everything before the first line that starts with '{' is
// skipped.
func Parse(b []byte) (*Output, error) {
	start := -1
	for i := 0; i < len(b); {
		if b[i] == '{' {
			start = i
			break
		}
		nl := bytes.IndexByte(b[i:], '\n')
		if nl < 0 {
			break
		}
		i += nl + 1
	}
	if start < 0 {
		return nil, errors.New("fio output holds no JSON document")
	}
	dec := json.NewDecoder(bytes.NewReader(b[start:]))
	var o Output
	if err := dec.Decode(&o); err != nil {
		return nil, fmt.Errorf("fio JSON output: %w", err)
	}
	if o.Version == "" {
		return nil, errors.New(`fio JSON output has no "fio version": not fio's --output-format=json`)
	}
	return &o, nil
}

// Latency is a completion-latency summary in milliseconds. Percentiles fio
// did not report (clat_percentiles=0 in a user's job file) are left out.
type Latency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50,omitempty"`
	P95  float64 `json:"p95,omitempty"`
	P99  float64 `json:"p99,omitempty"`
	P999 float64 `json:"p99_9,omitempty"`
	Max  float64 `json:"max"`
}

// Direction is the result of one direction (read or write) of a test.
type Direction struct {
	BWBytes  float64 `json:"bw_bytes"` // bytes per second
	MBps     float64 `json:"mb_s"`     // 10^6 bytes per second
	IOPS     float64 `json:"iops"`
	IOBytes  int64   `json:"io_bytes"`
	IOs      int64   `json:"ios"`
	RuntimeS float64 `json:"runtime_s"`
	ClatMs   Latency `json:"clat_ms"` // completion latency (fio clat_ns)
}

// Result is one job's (or reporting group's) figures.
type Result struct {
	Name  string     `json:"name"`
	Read  *Direction `json:"read,omitempty"`  // nil when the job did no reads
	Write *Direction `json:"write,omitempty"` // nil when the job did no writes
	Error int        `json:"error,omitempty"` // fio's error number for the job
}

func direction(io IO) *Direction {
	if io.TotalIOs == 0 && io.IOBytes == 0 {
		return nil
	}
	// Milliseconds, rounded to fio's own resolution (1/1000 ns) so they print
	// without binary noise.
	ms := func(ns float64) float64 { return math.Round(ns*1e3) / 1e9 }
	pct := func(p float64) float64 {
		v, _ := io.Clat.Pct(p)
		return ms(v)
	}
	return &Direction{
		BWBytes: io.BWBytes, MBps: io.BWBytes / 1e6, IOPS: io.IOPS, IOBytes: io.IOBytes, IOs: io.TotalIOs,
		RuntimeS: float64(io.RuntimeMs) / 1000,
		ClatMs: Latency{
			Mean: ms(io.Clat.Mean), P50: pct(50), P95: pct(95), P99: pct(99), P999: pct(99.9), Max: ms(io.Clat.Max),
		},
	}
}

// Results summarizes every job entry. Entries with the same name (a job
// with numjobs > 1 and no group_reporting) are named "name[1]", "name[2]"...
func (o *Output) Results() []Result {
	count := map[string]int{}
	for _, j := range o.Jobs {
		count[j.Name]++
	}
	seen := map[string]int{}
	out := make([]Result, 0, len(o.Jobs))
	for _, j := range o.Jobs {
		name := j.Name
		if count[name] > 1 {
			seen[name]++
			name = fmt.Sprintf("%s[%d]", name, seen[name])
		}
		out = append(out, Result{Name: name, Read: direction(j.Read), Write: direction(j.Write), Error: j.Error})
	}
	return out
}

// MajorVersion extracts 3 from "fio-3.33"; 0 when it cannot.
func MajorVersion(v string) int {
	v = strings.TrimPrefix(strings.TrimSpace(v), "fio-")
	if i := strings.IndexByte(v, '.'); i > 0 {
		v = v[:i]
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0
	}
	return n
}

// PercentileKeys lists the percentiles fio reported for l, sorted (for
// diagnostics and tests).
func (l Lat) PercentileKeys() []float64 {
	var out []float64
	for k := range l.Percentile {
		if f, err := strconv.ParseFloat(k, 64); err == nil {
			out = append(out, f)
		}
	}
	sort.Float64s(out)
	return out
}
