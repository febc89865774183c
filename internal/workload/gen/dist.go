// Package gen holds seeded random helpers and the random distributions that
// the workloads draw keys from.
//
// The integer distributions follow the definitions in PostgreSQL's pgbench
// documentation (random, random_exponential, random_gaussian,
// random_zipfian), so that a tunebench run and a pgbench run with the same
// parameters touch keys with the same probabilities.
package gen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Kind names a distribution.
type Kind uint8

const (
	Uniform Kind = iota
	Exponential
	Gaussian
	Zipfian
)

// Dist is a parsed distribution with its parameter.
type Dist struct {
	Kind  Kind
	Param float64
}

func (d Dist) String() string {
	switch d.Kind {
	case Exponential:
		return "exponential:" + strconv.FormatFloat(d.Param, 'g', -1, 64)
	case Gaussian:
		return "gaussian:" + strconv.FormatFloat(d.Param, 'g', -1, 64)
	case Zipfian:
		return "zipfian:" + strconv.FormatFloat(d.Param, 'g', -1, 64)
	default:
		return "uniform"
	}
}

// Parameter ranges as pgbench enforces them.
const (
	MinGaussianParam = 2.0
	MinZipfianParam  = 1.001
	MaxZipfianParam  = 1000.0
)

// ParseDist reads "uniform", "exponential:T", "gaussian:T" or "zipfian:S".
func ParseDist(s string) (Dist, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	name = strings.ToLower(name)
	if name == "uniform" {
		if hasArg {
			return Dist{}, fmt.Errorf("distribution %q: uniform takes no parameter", s)
		}
		return Dist{Kind: Uniform}, nil
	}
	var k Kind
	switch name {
	case "exponential":
		k = Exponential
	case "gaussian":
		k = Gaussian
	case "zipfian":
		k = Zipfian
	default:
		return Dist{}, fmt.Errorf("unknown distribution %q: use uniform, exponential:T, gaussian:T or zipfian:S", s)
	}
	if !hasArg {
		return Dist{}, fmt.Errorf("distribution %q needs a parameter, e.g. %s:%s", s, name, map[Kind]string{Exponential: "5", Gaussian: "5", Zipfian: "1.1"}[k])
	}
	p, err := strconv.ParseFloat(arg, 64)
	if err != nil || math.IsNaN(p) || math.IsInf(p, 0) {
		return Dist{}, fmt.Errorf("distribution %q: parameter %q is not a number", s, arg)
	}
	d := Dist{Kind: k, Param: p}
	return d, d.Validate()
}

// Validate checks the parameter range (pgbench's limits).
func (d Dist) Validate() error {
	switch d.Kind {
	case Exponential:
		if d.Param <= 0 {
			return fmt.Errorf("exponential parameter must be greater than 0 (got %g)", d.Param)
		}
	case Gaussian:
		if d.Param < MinGaussianParam {
			return fmt.Errorf("gaussian parameter must be at least %g (got %g)", MinGaussianParam, d.Param)
		}
	case Zipfian:
		if d.Param < MinZipfianParam || d.Param > MaxZipfianParam {
			return fmt.Errorf("zipfian parameter must be in [%g, %g] (got %g)", MinZipfianParam, MaxZipfianParam, d.Param)
		}
	}
	return nil
}

// Int draws an integer in [min, max] (inclusive) from d, with pgbench's
// random, random_exponential, random_gaussian or random_zipfian.
func (d Dist) Int(p *PRNG, min, max int64) int64 {
	switch d.Kind {
	case Exponential:
		return p.Exponential(min, max, d.Param)
	case Gaussian:
		return p.Gaussian(min, max, d.Param)
	case Zipfian:
		return p.Zipfian(min, max, d.Param)
	default:
		return p.Random(min, max)
	}
}

// NewRand makes a seeded PCG generator; stream separates workers that share
// a seed (tpcc's inputs; the pgbench-compatible draws use PRNG).
func NewRand(seed int64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), stream*0x9E3779B97F4A7C15+1))
}
