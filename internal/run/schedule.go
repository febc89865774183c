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
	return &Schedule{
		r:      rand.New(rand.NewPCG(uint64(seed), 0x5c4ed01e)),
		meanNs: float64(time.Second) / rate,
	}
}

// Next returns the next intended start as an offset from the origin.
func (s *Schedule) Next() time.Duration {
	s.at += s.r.ExpFloat64() * s.meanNs
	return time.Duration(s.at)
}
