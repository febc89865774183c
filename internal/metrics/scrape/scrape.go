// Package scrape measures a host or a container through the Prometheus
// exposition format its exporter serves: node_exporter for a database
// server's host (the same series the /proc samplers give: CPU split,
// memory, network, pressure stall, disk) and cAdvisor or a kubelet for the
// server's container (CPU, throttling, working-set memory, I/O, network,
// as `docker stats` shows them). Counters become rates as Prometheus'
// rate() takes them over two samples: the increase, or the new value when
// the counter went down (a reset), over the time between the samples'
// own timestamps when the exporter gives them (cAdvisor does), else
// between the scrapes.
package scrape

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Timeout bounds one scrape: an exporter that does not answer leaves a gap
// in the series, and never holds the run up.
const Timeout = 2 * time.Second

// families is a scrape: the metric families by name, and when it was
// taken.
type families struct {
	m  map[string]*dto.MetricFamily
	at time.Time
}

// fetch GETs url and parses the text exposition format.
func fetch(ctx context.Context, client *http.Client, url string) (families, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return families{}, err
	}
	// The text format: every exporter serves it (OpenMetrics only on
	// request).
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return families{}, err
	}
	defer resp.Body.Close()
	at := time.Now()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return families{}, fmt.Errorf("%s: %s %s", url, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return families{}, fmt.Errorf("%s: %w", url, err)
	}
	return families{m: m, at: at}, nil
}

// value is a sample's value (counter, gauge or untyped).
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// label is a sample's label value ("" when it has none).
func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// stamp is when a sample was taken: its own timestamp if it has one, else
// the scrape's.
func stamp(m *dto.Metric, scrape time.Time) time.Time {
	if m.TimestampMs != nil {
		return time.UnixMilli(m.GetTimestampMs())
	}
	return scrape
}

// counter is one counter series between samples.
type counter struct {
	v  float64
	at time.Time
	ok bool
}

// increase takes a new sample and returns the increase since the previous
// one and the seconds between them (ok false for the first sample, or no
// time between): after a reset (the value went down) the increase is the
// new value, as Prometheus counts it.
func (c *counter) increase(v float64, at time.Time) (inc, secs float64, ok bool) {
	prev, prevAt, had := c.v, c.at, c.ok
	c.v, c.at, c.ok = v, at, true
	secs = at.Sub(prevAt).Seconds()
	if !had || secs <= 0 {
		return 0, 0, false
	}
	if v < prev {
		return v, secs, true
	}
	return v - prev, secs, true
}

// change is the counter's raw change since its previous sample (negative
// when it went down), for a caller that tells a reset from a counter that
// may step back.
func (c *counter) change(v float64, at time.Time) (float64, bool) {
	prev, prevAt, had := c.v, c.at, c.ok
	c.v, c.at, c.ok = v, at, true
	if !had || !at.After(prevAt) {
		return 0, false
	}
	return v - prev, true
}

// rate is the counter's per-second rate since its previous sample.
func (c *counter) rate(v float64, at time.Time) (float64, bool) {
	inc, secs, ok := c.increase(v, at)
	if !ok {
		return 0, false
	}
	return inc / secs, true
}

// counters keeps the counters of a sampler by key.
type counters map[string]*counter

func (cs counters) get(key string) *counter {
	c := cs[key]
	if c == nil {
		c = &counter{}
		cs[key] = c
	}
	return c
}

// newClient is the HTTP client of a sampler (connections kept between
// scrapes).
func newClient() *http.Client { return &http.Client{Timeout: Timeout} }

// Redact is the URL with its password (user:password@) replaced by
// "xxxxx", for names, notes and stored sources.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}
