package tpcc

import "math/rand/v2"

// The transaction mix (clause 5.2.4.2, the "deck" alternative to a weighted
// random draw): each virtual user deals itself a deck of 23 cards, 10
// New-Order, 10 Payment, 1 Order-Status, 1 Delivery and 1 Stock-Level,
// shuffled anew at every pass. Over any whole pass the mix is exact
// (43.48% New-Order, 43.48% Payment, 4.35% each of the others), which meets
// the minimum percentages of clause 5.2.3 with no sampling noise.

// txnType indexes the five transactions.
type txnType uint8

const (
	txNewOrder txnType = iota
	txPayment
	txOrderStatus
	txDelivery
	txStockLevel
	numTxnTypes
)

// opNames are the operation names of the txn types, as stored with results.
var opNames = [numTxnTypes]string{OpNewOrder, OpPayment, OpOrderStatus, OpDelivery, OpStockLevel}

func (t txnType) String() string { return opNames[t] }

// DeckSize is the number of cards per pass, and deckCards how many of each
// transaction a pass holds (clause 5.2.4.2).
const DeckSize = 23

var deckCards = [numTxnTypes]int{txNewOrder: 10, txPayment: 10, txOrderStatus: 1, txDelivery: 1, txStockLevel: 1}

// deck deals the transaction types of one virtual user.
type deck struct {
	cards [DeckSize]txnType
	pos   int // next card; DeckSize = shuffle before dealing
	rng   *rand.Rand
}

func newDeck(rng *rand.Rand) *deck {
	d := &deck{rng: rng, pos: DeckSize}
	i := 0
	for t, n := range deckCards {
		for j := 0; j < n; j++ {
			d.cards[i] = txnType(t)
			i++
		}
	}
	return d
}

// peek returns the next card without dealing it (shuffling first at the
// start of a pass, so peek and next agree).
func (d *deck) peek() txnType {
	if d.pos == DeckSize {
		d.rng.Shuffle(DeckSize, func(i, j int) { d.cards[i], d.cards[j] = d.cards[j], d.cards[i] })
		d.pos = 0
	}
	return d.cards[d.pos]
}

// next deals the next card.
func (d *deck) next() txnType {
	t := d.peek()
	d.pos++
	return t
}

// terminal is what one virtual user draws its inputs from: its warehouses,
// its Stock-Level district and the run's NURand constants.
type terminal struct {
	warehouses int   // W of the database
	home       int   // home warehouse: (vuser mod W) + 1
	own        []int // with --all-warehouses: the warehouses dealt to this vuser
	slDistrict int   // fixed Stock-Level district (clause 2.8.1.1)
	c          Constants
	rng        *rand.Rand
}

// HomeWarehouse is the home warehouse of virtual user vuser (0-based) among
// w warehouses: dealt round-robin, so no two virtual users share one while
// there are at least as many warehouses as virtual users (HammerDB picks at
// random and leaves warehouses idle).
func HomeWarehouse(vuser, w int) int { return vuser%w + 1 }

// DealtWarehouses are the warehouses dealt round-robin to virtual user vuser
// (0-based) of vusers among w for --all-warehouses: vuser+1, vuser+1+vusers,
// ... When there are fewer warehouses than virtual users some get none and
// use their home warehouse.
func DealtWarehouses(vuser, vusers, w int) []int {
	var out []int
	for x := vuser + 1; x <= w; x += vusers {
		out = append(out, x)
	}
	if len(out) == 0 {
		out = append(out, HomeWarehouse(vuser, w))
	}
	return out
}

// StockLevelDistrict is the fixed Stock-Level district of virtual user
// vuser (clause 2.8.1.1) among w warehouses: spread over the districts, and
// different for the virtual users that share a home warehouse (up to 10 of
// them).
func StockLevelDistrict(vuser, w int) int {
	return (vuser/w+vuser%w)%DistrictsPerWarehouse + 1
}

func newTerminal(o RunOptions, vuser int, rng *rand.Rand) *terminal {
	// A shard's virtual user is the whole run's FirstVUser+vuser.
	vuser += o.FirstVUser
	all := o.VUsers
	if o.AllVUsers > 0 {
		all = o.AllVUsers
	}
	t := &terminal{
		warehouses: o.Warehouses,
		home:       HomeWarehouse(vuser, o.Warehouses),
		slDistrict: StockLevelDistrict(vuser, o.Warehouses),
		c:          o.Constants,
		rng:        rng,
	}
	if o.AllWarehouses {
		t.own = DealtWarehouses(vuser, all, o.Warehouses)
	}
	return t
}

// warehouse picks the warehouse of the next transaction.
func (t *terminal) warehouse() int {
	if len(t.own) > 1 {
		return t.own[t.rng.IntN(len(t.own))]
	}
	if len(t.own) == 1 {
		return t.own[0]
	}
	return t.home
}

// otherWarehouse picks a warehouse other than w uniformly; W must be > 1.
func (t *terminal) otherWarehouse(w int) int {
	x := Uniform(t.rng, 1, t.warehouses-1)
	if x >= w {
		x++
	}
	return x
}

func (t *terminal) district() int { return Uniform(t.rng, 1, DistrictsPerWarehouse) }
