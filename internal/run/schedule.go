package run

import (
	"math/rand/v2"
	"time"
)

// Schedule is a seeded Poisson arrival process: inter-arrival gaps are
// exponential with mean 1/rate. Next returns cumulative intended start
// offsets from the schedule's origin; the schedule never resets, so falling
// behind never moves later arrivals (pgbench -R semantics).
type Schedule struct {
	r      *rand.Rand
	meanNs float64
	at     float64 // ns since origin, kept in float64 so gaps do not round away
}

// NewSchedule returns the schedule of the given rate (transactions per
// second, > 0) seeded with seed.
func NewSchedule(rate float64, seed int64) *Schedule {
	return newScheduleStream(rate, seed, 0)
}

// newScheduleStream is the schedule of stream k of a seed: multiplexed
// threads in the open loop each serve their own share of the rate, each
// share an independent Poisson process (stream k for thread k); together
// they are a Poisson process of the whole rate. Stream 0 is NewSchedule's.
func newScheduleStream(rate float64, seed int64, k uint64) *Schedule {
	return &Schedule{
		r:      rand.New(rand.NewPCG(uint64(seed), 0x5c4ed01e+k)),
		meanNs: float64(time.Second) / rate,
	}
}

// Next returns the next intended start as an offset from the origin.
func (s *Schedule) Next() time.Duration {
	s.at += s.r.ExpFloat64() * s.meanNs
	return time.Duration(s.at)
}
