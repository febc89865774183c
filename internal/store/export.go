package store

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"time"
)

// ExportFormat identifies the layout ExportJSON writes; it changes when the
// layout changes incompatibly.
const ExportFormat = "tunebench.run.v1"

// HistogramEncoding describes the "data" field of exported histograms.
const HistogramEncoding = "hdrhistogram-v2-compressed+base64"

// ExportJSON writes r as one JSON document:
//
//	{
//	  "format": "tunebench.run.v1",
//	  "id": ..., "experiment": ..., "workload": ..., "variant": ..., "status": ...,
//	  "started_at": RFC 3339 UTC or null, "ended_at": ...,
//	  "params": {...}, "env": {...}, "summary": {...}, "check": {...} or null,
//	  "series": {"name": [[t, v], ...], ...},
//	  "histograms": [{"op", "class", "kind", "encoding", "data": base64}, ...]
//	}
//
// The top-level keys come in the order above. Keys inside the embedded JSON
// objects and series names are sorted; points keep their order within a
// series; histograms are sorted by op, class, kind. A value that JSON cannot
// carry (NaN, ±Inf) is written as null. The output is a function of r alone.
func ExportJSON(w io.Writer, r *Run) error {
	bw := bufio.NewWriter(w)
	e := &jsonOut{w: bw}

	e.raw("{\n")
	e.field("format", ExportFormat, true)
	e.key("id")
	e.raw(strconv.FormatInt(r.ID, 10) + ",\n")
	e.field("experiment", r.Experiment, true)
	e.field("workload", r.Workload, true)
	e.field("variant", r.Variant, true)
	e.field("status", r.Status, true)
	e.timeField("started_at", r.StartedAt)
	e.timeField("ended_at", r.EndedAt)
	e.embedded("params", r.Params)
	e.embedded("env", r.Env)
	e.embedded("summary", r.Summary)
	e.embedded("check", r.Check)

	e.key("series")
	names, groups := sortedSeries(r.Series)
	if len(names) == 0 {
		e.raw("{},\n")
	} else {
		e.raw("{\n")
		var buf []byte
		for i, n := range names {
			e.raw("    ")
			e.value(n)
			e.raw(": [")
			for j, idx := range groups[n] {
				p := r.Series[idx]
				buf = buf[:0]
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = append(buf, '[')
				buf = appendJSONFloat(buf, p.T)
				buf = append(buf, ',')
				buf = appendJSONFloat(buf, p.V)
				buf = append(buf, ']')
				e.rawBytes(buf)
			}
			if i < len(names)-1 {
				e.raw("],\n")
			} else {
				e.raw("]\n")
			}
		}
		e.raw("  },\n")
	}

	e.key("histograms")
	hs := sortedHistograms(r.Histograms)
	if len(hs) == 0 {
		e.raw("[]\n")
	} else {
		e.raw("[\n")
		for i, h := range hs {
			e.raw("    ")
			e.value(struct {
				Op       string `json:"op"`
				Class    string `json:"class"`
				Kind     string `json:"kind"`
				Encoding string `json:"encoding"`
				Data     string `json:"data"`
			}{h.Op, h.Class, h.Kind, HistogramEncoding, base64.StdEncoding.EncodeToString(h.Encoded)})
			if i < len(hs)-1 {
				e.raw(",\n")
			} else {
				e.raw("\n")
			}
		}
		e.raw("  ]\n")
	}
	e.raw("}\n")
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

// jsonOut writes JSON pieces and remembers the first error.
type jsonOut struct {
	w   *bufio.Writer
	err error
}

func (e *jsonOut) raw(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *jsonOut) rawBytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *jsonOut) value(v any) {
	if e.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		e.err = err
		return
	}
	e.rawBytes(b)
}

func (e *jsonOut) key(k string) {
	e.raw("  ")
	e.value(k)
	e.raw(": ")
}

func (e *jsonOut) field(k string, v any, comma bool) {
	e.key(k)
	e.value(v)
	if comma {
		e.raw(",\n")
	} else {
		e.raw("\n")
	}
}

func (e *jsonOut) timeField(k string, t time.Time) {
	if t.IsZero() {
		e.key(k)
		e.raw("null,\n")
		return
	}
	e.field(k, t.UTC().Format(time.RFC3339Nano), true)
}

// embedded writes a stored JSON value with its object keys sorted, so the
// export does not depend on how the value was formatted when saved.
func (e *jsonOut) embedded(k string, m json.RawMessage) {
	e.key(k)
	if e.err != nil {
		return
	}
	if len(m) == 0 {
		e.raw("null,\n")
		return
	}
	canon, err := canonicalJSON(m)
	if err != nil {
		e.err = fmt.Errorf("export %s: %w", k, err)
		return
	}
	e.rawBytes(canon)
	e.raw(",\n")
}

// canonicalJSON re-encodes a JSON value compactly with sorted object keys;
// numbers keep their exact text.
func canonicalJSON(m json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(m))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// appendJSONFloat formats f the way encoding/json does for finite values
// (shortest representation that round-trips) and as null otherwise.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, f, format, -1, 64)
}

// ExportCSV writes the run's per-second time series in wide form: a header
// "t_s,<series>,..." with the series names sorted, then one row per distinct
// time t (ascending) with each series' value at exactly that t, or an empty
// cell when the series has no point there (if a series has several points at
// the same t the last one is used). NaN is written as "NaN", infinities as
// "+Inf"/"-Inf". The run's summary, parameters and environment are not in the
// CSV; use ExportJSON for those.
func ExportCSV(w io.Writer, r *Run) error {
	names, groups := sortedSeries(r.Series)
	col := make(map[string]int, len(names))
	for i, n := range names {
		col[n] = i
	}
	type cell struct {
		v   float64
		set bool
	}
	byT := make(map[float64][]cell)
	var ts []float64
	for _, n := range names {
		for _, idx := range groups[n] {
			p := r.Series[idx]
			row, ok := byT[p.T]
			if !ok {
				row = make([]cell, len(names))
				byT[p.T] = row
				ts = append(ts, p.T)
			}
			row[col[n]] = cell{p.V, true}
		}
	}
	sort.Float64s(ts)

	cw := csv.NewWriter(w)
	header := append([]string{"t_s"}, names...)
	if err := cw.Write(header); err != nil {
		return err
	}
	rec := make([]string, len(names)+1)
	var buf []byte
	for _, t := range ts {
		buf = strconv.AppendFloat(buf[:0], t, 'f', -1, 64)
		rec[0] = string(buf)
		for i, c := range byT[t] {
			rec[i+1] = ""
			if c.set {
				rec[i+1] = csvFloat(c.v)
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return string(appendJSONFloat(nil, v))
}

// sortedSeries returns the series names in sorted order and, for each name,
// the indexes of its points in order.
func sortedSeries(pts []Point) ([]string, map[string][]int) {
	groups := groupSeries(pts)
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, groups
}

func sortedHistograms(hs []Histogram) []Histogram {
	out := append([]Histogram(nil), hs...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Op != b.Op {
			return a.Op < b.Op
		}
		if a.Class != b.Class {
			return a.Class < b.Class
		}
		return a.Kind < b.Kind
	})
	return out
}
