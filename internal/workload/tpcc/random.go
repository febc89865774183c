package tpcc

import (
	"math/rand/v2"
)

// NURand constants A (clause 2.1.6).
const (
	ALast   = 255  // C_LAST, range [0..999]
	ACustID = 1023 // C_ID, range [1..3000]
	AItemID = 8191 // OL_I_ID, range [1..100000]
)

// Uniform returns a uniform integer in [lo, hi] (the spec's random(x, y)).
func Uniform(r *rand.Rand, lo, hi int) int {
	return lo + r.IntN(hi-lo+1)
}

// NURand is the spec's non-uniform random function (clause 2.1.6):
// (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
func NURand(r *rand.Rand, a, x, y, c int) int {
	return (((Uniform(r, 0, a) | Uniform(r, x, y)) + c) % (y - x + 1)) + x
}

// Constants are the run-time constants C of NURand, one per field
// (clause 2.1.6.1): the same for every terminal of a run.
type Constants struct {
	CLast   int `json:"c_last"`    // in [0..255]
	CCustID int `json:"c_cust_id"` // in [0..1023]
	CItemID int `json:"c_item_id"` // in [0..8191]
}

// NewConstants draws constants uniformly within their ranges. The loader
// uses them as C-Load; runs use NewRunConstants.
func NewConstants(r *rand.Rand) Constants {
	return Constants{CLast: Uniform(r, 0, ALast), CCustID: Uniform(r, 0, ACustID), CItemID: Uniform(r, 0, AItemID)}
}

// ValidLastDelta reports whether a C_LAST run constant may be used with the
// load constant (clause 2.1.6.1): |C-Run - C-Load| in [65..119], and neither
// 96 nor 112.
func ValidLastDelta(load, run int) bool {
	d := run - load
	if d < 0 {
		d = -d
	}
	return d >= 65 && d <= 119 && d != 96 && d != 112
}

// NewRunConstants draws run constants for a database loaded with load: C_ID
// and OL_I_ID uniformly, C_LAST uniformly among the values that satisfy the
// delta rule. Every load value in [0..255] has at least one valid run value.
func NewRunConstants(r *rand.Rand, load Constants) Constants {
	var ok []int
	for c := 0; c <= ALast; c++ {
		if ValidLastDelta(load.CLast, c) {
			ok = append(ok, c)
		}
	}
	return Constants{CLast: ok[r.IntN(len(ok))], CCustID: Uniform(r, 0, ACustID), CItemID: Uniform(r, 0, AItemID)}
}

// CustomerID draws a customer number with NURand(1023, 1, 3000).
func (c Constants) CustomerID(r *rand.Rand) int {
	return NURand(r, ACustID, 1, CustomersPerDistrict, c.CCustID)
}

// ItemID draws an item number with NURand(8191, 1, 100000).
func (c Constants) ItemID(r *rand.Rand) int { return NURand(r, AItemID, 1, Items, c.CItemID) }

// LastNameNumber draws the number behind a customer's last name with
// NURand(255, 0, 999).
func (c Constants) LastNameNumber(r *rand.Rand) int { return NURand(r, ALast, 0, 999, c.CLast) }

// syllables build last names (clause 4.3.2.3).
var syllables = [10]string{"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}

// AppendLastName appends the last name for num in [0..999]: the syllables
// of its three decimal digits.
func AppendLastName(b []byte, num int) []byte {
	b = append(b, syllables[num/100]...)
	b = append(b, syllables[num/10%10]...)
	return append(b, syllables[num%10]...)
}

// LastName returns the last name for num in [0..999].
func LastName(num int) string { return string(AppendLastName(nil, num)) }

const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// AppendAString appends a random alphanumeric string of length in [lo, hi]
// (the spec's a-string, clause 4.3.2.2).
func AppendAString(b []byte, r *rand.Rand, lo, hi int) []byte {
	n := Uniform(r, lo, hi)
	for i := 0; i < n; i++ {
		b = append(b, alnum[r.IntN(len(alnum))])
	}
	return b
}

// AppendNString appends a random numeric string of length in [lo, hi].
func AppendNString(b []byte, r *rand.Rand, lo, hi int) []byte {
	n := Uniform(r, lo, hi)
	for i := 0; i < n; i++ {
		b = append(b, byte('0'+r.IntN(10)))
	}
	return b
}

// AppendZip appends a zip code: 4 random digits then "11111" (clause 4.3.2.7).
func AppendZip(b []byte, r *rand.Rand) []byte {
	b = AppendNString(b, r, 4, 4)
	return append(b, "11111"...)
}

// AppendData appends an a-string of length [lo, hi] that contains
// "ORIGINAL" at a random position in 10% of the cases (clause 4.3.3.1 for
// I_DATA and S_DATA).
func AppendData(b []byte, r *rand.Rand, lo, hi int) []byte {
	if r.IntN(10) != 0 {
		return AppendAString(b, r, lo, hi)
	}
	n := Uniform(r, lo, hi)
	if n < 8 {
		n = 8
	}
	at := r.IntN(n - 8 + 1)
	for i := 0; i < at; i++ {
		b = append(b, alnum[r.IntN(len(alnum))])
	}
	b = append(b, "ORIGINAL"...)
	for i := at + 8; i < n; i++ {
		b = append(b, alnum[r.IntN(len(alnum))])
	}
	return b
}

// Permutation returns a random permutation of 1..n (order-to-customer
// assignment at load, clause 4.3.3.1: O_C_ID is a permutation of [1..3000]).
func Permutation(r *rand.Rand, n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i + 1
	}
	r.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}

// MiddleIndex returns the 0-based position of the customer to use among n
// customers with the same last name sorted by C_FIRST: position ceil(n/2)
// counted from 1 (clauses 2.5.2.2 and 2.6.2.2). n must be >= 1.
func MiddleIndex(n int) int { return (n+1)/2 - 1 }
