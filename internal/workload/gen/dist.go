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

// Int draws an integer in [min, max] (inclusive) from d.
func (d Dist) Int(r *rand.Rand, min, max int64) int64 {
	switch d.Kind {
	case Exponential:
		return ExponentialInt(r, min, max, d.Param)
	case Gaussian:
		return GaussianInt(r, min, max, d.Param)
	case Zipfian:
		return ZipfianInt(r, min, max, d.Param)
	default:
		return UniformInt(r, min, max)
	}
}

// UniformInt draws uniformly from [min, max].
func UniformInt(r *rand.Rand, min, max int64) int64 {
	return min + r.Int64N(max-min+1)
}

// ExponentialInt draws from [min, max] with density proportional to
// exp(-param*(x-min)/(max-min+1)), as pgbench's random_exponential.
func ExponentialInt(r *rand.Rand, min, max int64, param float64) int64 {
	cut := math.Exp(-param)
	u := 1.0 - r.Float64() // (0, 1]
	v := -math.Log(cut+(1.0-cut)*u) / param
	return min + int64(float64(max-min+1)*v)
}

// GaussianInt draws from a normal distribution centred on the middle of
// [min, max] and truncated at ±param standard deviations, as pgbench's
// random_gaussian.
func GaussianInt(r *rand.Rand, min, max int64, param float64) int64 {
	var z float64
	for {
		// Box-Muller transform; u1 in (0, 1] so the log is finite.
		u1 := 1.0 - r.Float64()
		u2 := r.Float64()
		z = math.Sqrt(-2.0*math.Log(u1)) * math.Sin(2.0*math.Pi*u2)
		if z >= -param && z < param {
			break
		}
	}
	v := (z + param) / (2.0 * param)
	return min + int64(float64(max-min+1)*v)
}

// ZipfianInt draws from a Zipf distribution of exponent s over [min, max]
// (min most frequent), using rejection-inversion as described in Devroye,
// "Non-Uniform Random Variate Generation" (1986), pp. 550-551, which is the
// method pgbench documents for random_zipfian.
func ZipfianInt(r *rand.Rand, min, max int64, s float64) int64 {
	n := float64(max - min + 1)
	b := math.Pow(2.0, s-1.0)
	for {
		u := 1.0 - r.Float64()
		v := r.Float64()
		x := math.Floor(math.Pow(u, -1.0/(s-1.0)))
		t := math.Pow(1.0+1.0/x, s-1.0)
		if v*x*(t-1.0)/(b-1.0) <= t/b && x <= n {
			return min + int64(x) - 1
		}
	}
}

// NewRand makes a seeded PCG generator; stream separates workers that share a seed.
func NewRand(seed int64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), stream*0x9E3779B97F4A7C15+1))
}
