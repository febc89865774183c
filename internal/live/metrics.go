package live

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// The metric names (docs/live.md). Every run series carries the labels
// run and workload, and shard when the run has one.
const (
	MetricTransactions = "tunebench_transactions_total"
	MetricCommitted    = "tunebench_committed_transactions_total"
	MetricErrors       = "tunebench_errors_total"
	MetricLatency      = "tunebench_latency_seconds"
	MetricTPS          = "tunebench_tps"
	MetricHeadline     = "tunebench_headline"
	MetricActive       = "tunebench_active_workers"
	MetricQueue        = "tunebench_queue_depth"
	MetricRunTime      = "tunebench_run_time_seconds"
	MetricRunDone      = "tunebench_run_done"
	MetricRunInfo      = "tunebench_run_info"
	MetricSample       = "tunebench_sample"

	MetricExpRuns    = "tunebench_experiment_runs"
	MetricExpDone    = "tunebench_experiment_runs_done"
	MetricExpCurrent = "tunebench_experiment_current_run"
	MetricExpETA     = "tunebench_experiment_eta_seconds"
	MetricExpEnded   = "tunebench_experiment_done"
)

// descs are the descriptions of one run's metrics: the run's labels are
// constant labels, so that a shard label can be added without changing a
// metric's name or its other labels.
type descs struct {
	transactions, committed, errors, latency       *prometheus.Desc
	tps, headline, active, queue, runTime, runDone *prometheus.Desc
	info, sample                                   *prometheus.Desc
}

func newDescs(info RunInfo) *descs {
	c := prometheus.Labels{"run": info.Key, "workload": info.Workload}
	if info.Shard != "" {
		c["shard"] = info.Shard
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, c)
	}
	return &descs{
		transactions: d(MetricTransactions, "Transactions ended, by type (op), outcome class and the phase they started in.", "op", "outcome", "phase"),
		committed:    d(MetricCommitted, "Committed transactions (outcomes ok and retried_ok) of every type, by phase: phase=\"measure\" ends equal to the stored run's transactions.", "phase"),
		errors:       d(MetricErrors, "Transactions that ended in an error class (failed_retry_exhausted, failed_error, conn_error, ambiguous_commit), by phase.", "phase"),
		latency:      d(MetricLatency, "Transaction latency (open loop: from the intended start), cumulative buckets, by type, outcome class and phase.", "op", "outcome", "phase"),
		tps:          d(MetricTPS, "Committed transactions per second over the last tick (for a graph; rate() of the committed counter is the figure to aggregate)."),
		headline:     d(MetricHeadline, "The workload's headline (label metric): over the last tick while the run goes (tps, tpcc's NOPM), the stored figure once the run ended.", "metric"),
		active:       d(MetricActive, "Workers inside a transaction at the last tick."),
		queue:        d(MetricQueue, "Open loop: intended starts waiting for a worker at the last tick."),
		runTime:      d(MetricRunTime, "The executor's time at the last tick: seconds since the measurement started (negative in the warm-up)."),
		runDone:      d(MetricRunDone, "1 once the run ended (its final figures are in the store), else 0."),
		info:         d(MetricRunInfo, "The run: its experiment and plan run (-1 outside one) and its headline metric; always 1.", "experiment", "plan_run", "headline"),
		sample:       d(MetricSample, "The latest value of each sampler series (docs/metrics.md names them and their units).", "series"),
	}
}

var (
	expLabels    = []string{"experiment"}
	descExpRuns  = prometheus.NewDesc(MetricExpRuns, "Runs to do in this attempt of the experiment.", expLabels, nil)
	descExpDone  = prometheus.NewDesc(MetricExpDone, "Runs of this attempt that ended.", expLabels, nil)
	descExpCur   = prometheus.NewDesc(MetricExpCurrent, "The position of the current run among the runs of this attempt (run i of n).", expLabels, nil)
	descExpETA   = prometheus.NewDesc(MetricExpETA, "Estimated time left, in seconds.", expLabels, nil)
	descExpEnded = prometheus.NewDesc(MetricExpEnded, "1 once the experiment ended, else 0.", expLabels, nil)
)

// collector serves the hub through the Prometheus registry. It is
// unchecked (Describe sends nothing): its series change with the run.
type collector struct{ h *Hub }

func (collector) Describe(chan<- *prometheus.Desc) {}

// histogramCopy is one histogram series copied under the lock.
type histogramCopy struct {
	key     outcomeKey
	n       int64
	sum     float64
	buckets []int64
}

// runCopy is what a scrape serves of the run, copied under the lock.
type runCopy struct {
	d        *descs
	info     RunInfo
	counts   map[outcomeKey]int64
	hists    []histogramCopy
	last     tickRec
	ticked   bool
	headline float64
	headSet  bool
	done     bool
	latest   map[string]float64
}

type expCopy struct {
	name                            string
	total, done, ordinal, etaSecond float64
	ended                           bool
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	rc, ec := c.h.copyForScrape()
	if rc != nil {
		rc.emit(ch)
	}
	if ec != nil {
		l := ec.name
		send(ch)(prometheus.NewConstMetric(descExpRuns, prometheus.GaugeValue, ec.total, l))
		send(ch)(prometheus.NewConstMetric(descExpDone, prometheus.GaugeValue, ec.done, l))
		send(ch)(prometheus.NewConstMetric(descExpCur, prometheus.GaugeValue, ec.ordinal, l))
		send(ch)(prometheus.NewConstMetric(descExpETA, prometheus.GaugeValue, ec.etaSecond, l))
		send(ch)(prometheus.NewConstMetric(descExpEnded, prometheus.GaugeValue, b2f(ec.ended), l))
	}
}

func (h *Hub) copyForScrape() (*runCopy, *expCopy) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var rc *runCopy
	if r := h.run; r != nil {
		rc = &runCopy{d: r.descs, info: r.info, counts: make(map[outcomeKey]int64, len(r.outcomes)),
			last: r.last, ticked: r.ticked, headline: r.headline.v, headSet: r.headline.set, done: r.finished,
			latest: make(map[string]float64, len(r.latest))}
		for _, k := range r.sortedOutcomes() {
			o := r.outcomes[k]
			rc.counts[k] = o.count
			if o.latency {
				rc.hists = append(rc.hists, histogramCopy{key: k, n: o.latN, sum: o.sumSec, buckets: append([]int64(nil), o.buckets...)})
			}
		}
		now := h.now()
		for s, v := range r.latest {
			if r.fresh(v, now) {
				rc.latest[s] = v.v
			}
		}
	}
	var ec *expCopy
	if e := h.exp; e != nil {
		ec = &expCopy{name: e.info.Name, total: float64(e.total), done: float64(e.done), ordinal: float64(e.ordinal),
			etaSecond: e.etaLeft(h.now()).Seconds(), ended: e.finished}
	}
	return rc, ec
}

func (rc *runCopy) emit(ch chan<- prometheus.Metric) {
	d := rc.d
	committed := map[string]int64{}
	errors := map[string]int64{}
	for k, n := range rc.counts {
		send(ch)(prometheus.NewConstMetric(d.transactions, prometheus.CounterValue, float64(n), k.op, k.class.String(), k.phase))
		if k.class.Committed() {
			committed[k.phase] += n
		}
		if k.class.IsError() {
			errors[k.phase] += n
		}
	}
	// Both phases' totals are served from the start of an executor's run
	// (0 until the first transaction), so that rate() and increase() see
	// the counter begin; a workload that measures itself has none.
	for _, ph := range []string{PhaseWarmup, PhaseMeasure} {
		if !rc.info.Ticks {
			break
		}
		send(ch)(prometheus.NewConstMetric(d.committed, prometheus.CounterValue, float64(committed[ph]), ph))
		send(ch)(prometheus.NewConstMetric(d.errors, prometheus.CounterValue, float64(errors[ph]), ph))
	}
	for _, hc := range rc.hists {
		b := make(map[float64]uint64, len(Bounds))
		for i, ub := range Bounds {
			b[ub] = uint64(hc.buckets[i])
		}
		send(ch)(prometheus.NewConstHistogram(d.latency, uint64(hc.n), hc.sum, b, hc.key.op, hc.key.class.String(), hc.key.phase))
	}
	if rc.ticked {
		send(ch)(prometheus.NewConstMetric(d.tps, prometheus.GaugeValue, rc.last.TPS))
		send(ch)(prometheus.NewConstMetric(d.active, prometheus.GaugeValue, float64(rc.last.Active)))
		send(ch)(prometheus.NewConstMetric(d.queue, prometheus.GaugeValue, float64(rc.last.Queue)))
		send(ch)(prometheus.NewConstMetric(d.runTime, prometheus.GaugeValue, rc.last.T))
	}
	if rc.headSet {
		send(ch)(prometheus.NewConstMetric(d.headline, prometheus.GaugeValue, rc.headline, rc.info.Headline.Metric))
	}
	send(ch)(prometheus.NewConstMetric(d.runDone, prometheus.GaugeValue, b2f(rc.done)))
	send(ch)(prometheus.NewConstMetric(d.info, prometheus.GaugeValue, 1, rc.info.Experiment, strconv.Itoa(rc.info.PlanRun), rc.info.Headline.Metric))
	for s, v := range rc.latest {
		send(ch)(prometheus.NewConstMetric(d.sample, prometheus.GaugeValue, v, s))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// send passes a metric on; one that cannot be made (a label value that is
// not UTF-8, from a script's name) is left out rather than failing the
// scrape or the run.
func send(ch chan<- prometheus.Metric) func(prometheus.Metric, error) {
	return func(m prometheus.Metric, err error) {
		if err == nil {
			ch <- m
		}
	}
}
