package tpcc

import (
	"math"
	"math/rand/v2"
	"time"
)

// Keying and think times of the emulated terminals (clause 5.2.5.7), used
// with --keying-think. The spec's terminal cycle is: menu, keying time,
// transaction (the measured response time), think time, menu, ...
//
// The executor sleeps Outcome.Think after each Step, outside the timed
// region; the worker never sleeps them itself. So that the sleeps fall in
// the spec's order, Step returns, as Think, the think time of the
// transaction it just ran plus the keying time of the next one (which the
// deck already knows). The very first transaction of each virtual user
// therefore starts without its keying time, which changes nothing after the
// first minute.

// KeyingTime is the minimum keying time of each transaction type (clause
// 5.2.5.7): New-Order 18 s, Payment 3 s, Order-Status, Delivery and
// Stock-Level 2 s.
var keyingTimes = [numTxnTypes]time.Duration{
	txNewOrder:    18 * time.Second,
	txPayment:     3 * time.Second,
	txOrderStatus: 2 * time.Second,
	txDelivery:    2 * time.Second,
	txStockLevel:  2 * time.Second,
}

// thinkMeans are the minimum mean think times (clause 5.2.5.7): New-Order
// and Payment 12 s, Order-Status 10 s, Delivery and Stock-Level 5 s.
var thinkMeans = [numTxnTypes]time.Duration{
	txNewOrder:    12 * time.Second,
	txPayment:     12 * time.Second,
	txOrderStatus: 10 * time.Second,
	txDelivery:    5 * time.Second,
	txStockLevel:  5 * time.Second,
}

// KeyingTime returns the keying time of op (an Op* name), 0 if unknown.
func KeyingTime(op string) time.Duration {
	for t, n := range opNames {
		if n == op {
			return keyingTimes[t]
		}
	}
	return 0
}

// ThinkMean returns the mean think time of op (an Op* name), 0 if unknown.
func ThinkMean(op string) time.Duration {
	for t, n := range opNames {
		if n == op {
			return thinkMeans[t]
		}
	}
	return 0
}

// ThinkTime draws a think time with mean mean (clause 5.2.5.4):
// Tt = -ln(r) * mean with r uniform in (0, 1], truncated at 10 * mean.
func ThinkTime(rng *rand.Rand, mean time.Duration) time.Duration {
	r := 1 - rng.Float64() // (0, 1]
	return thinkFromR(r, mean)
}

// thinkFromR is ThinkTime for a given r in (0, 1].
func thinkFromR(r float64, mean time.Duration) time.Duration {
	t := -math.Log(r) * float64(mean)
	if limit := 10 * float64(mean); t > limit || math.IsInf(t, 1) || math.IsNaN(t) {
		t = limit
	}
	return time.Duration(t)
}

// pause is the Think of a step that ran done, with next the next card.
func pause(rng *rand.Rand, done, next txnType) time.Duration {
	return ThinkTime(rng, thinkMeans[done]) + keyingTimes[next]
}
