package qgen

// The word lists the parameters are drawn from, in the order of the
// distributions of the same name in dbgen/dists.dss of the TPC-H tools
// (the order matters: a draw selects an entry by position). All entries of
// each list have the same weight there; the weights that are not 1 (Q13a
// 20, Q13b 40) are kept next to their lists because they set the range of
// the draw.

// typeSyllables are the three syllables of P_TYPE. The 150 entries of
// dists.dss "p_types" are their combinations with the first syllable
// varying slowest: entry i is first[i/25] second[i/5%5] third[i%5].
var typeSyllables = [3][]string{
	{"STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"},
	{"ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"},
	{"TIN", "NICKEL", "BRASS", "STEEL", "COPPER"},
}

// numTypes is the number of entries of dists.dss "p_types".
const numTypes = 6 * 5 * 5

// partType returns the syllables of entry i of dists.dss "p_types".
func partType(i int) [3]string {
	return [3]string{
		typeSyllables[0][i/25],
		typeSyllables[1][i/5%5],
		typeSyllables[2][i%5],
	}
}

// containerWords are the two words of P_CONTAINER. The 40 entries of
// dists.dss "p_cntr" vary the second word fastest: entry i is
// first[i/8] second[i%8].
var containerWords = [2][]string{
	{"SM", "LG", "MED", "JUMBO", "WRAP"},
	{"CASE", "BOX", "BAG", "JAR", "PACK", "PKG", "CAN", "DRUM"},
}

// numContainers is the number of entries of dists.dss "p_cntr".
const numContainers = 5 * 8

// container returns entry i of dists.dss "p_cntr".
func container(i int) string {
	return containerWords[0][i/8] + " " + containerWords[1][i%8]
}

// colors is dists.dss "colors" (the words of P_NAME).
var colors = []string{
	"almond", "antique", "aquamarine", "azure", "beige", "bisque", "black",
	"blanched", "blue", "blush", "brown", "burlywood", "burnished",
	"chartreuse", "chiffon", "chocolate", "coral", "cornflower", "cornsilk",
	"cream", "cyan", "dark", "deep", "dim", "dodger", "drab", "firebrick",
	"floral", "forest", "frosted", "gainsboro", "ghost", "goldenrod",
	"green", "grey", "honeydew", "hot", "indian", "ivory", "khaki", "lace",
	"lavender", "lawn", "lemon", "light", "lime", "linen", "magenta",
	"maroon", "medium", "metallic", "midnight", "mint", "misty", "moccasin",
	"navajo", "navy", "olive", "orange", "orchid", "pale", "papaya", "peach",
	"peru", "pink", "plum", "powder", "puff", "purple", "red", "rose", "rosy",
	"royal", "saddle", "salmon", "sandy", "seashell", "sienna", "sky",
	"slate", "smoke", "snow", "spring", "steel", "tan", "thistle", "tomato",
	"turquoise", "violet", "wheat", "white", "yellow",
}

// regions is dists.dss "regions" (R_NAME in R_REGIONKEY order).
var regions = []string{"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"}

// nation is one entry of dists.dss "nations2" (qgen draws nations from
// that uniform list) with its region, an index into regions. The regions
// are those of dists.dss "nations", whose weights, summed in order, give
// each nation's N_REGIONKEY.
type nation struct {
	name   string
	region int
}

// nations is dists.dss "nations2" in N_NATIONKEY order.
var nations = []nation{
	{"ALGERIA", 0}, {"ARGENTINA", 1}, {"BRAZIL", 1}, {"CANADA", 1},
	{"EGYPT", 4}, {"ETHIOPIA", 0}, {"FRANCE", 3}, {"GERMANY", 3},
	{"INDIA", 2}, {"INDONESIA", 2}, {"IRAN", 4}, {"IRAQ", 4},
	{"JAPAN", 2}, {"JORDAN", 4}, {"KENYA", 0}, {"MOROCCO", 0},
	{"MOZAMBIQUE", 0}, {"PERU", 1}, {"CHINA", 2}, {"ROMANIA", 3},
	{"SAUDI ARABIA", 4}, {"VIETNAM", 2}, {"RUSSIA", 3},
	{"UNITED KINGDOM", 3}, {"UNITED STATES", 1},
}

// segments is dists.dss "msegmnt" (C_MKTSEGMENT).
var segments = []string{"AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"}

// shipModes is dists.dss "smode" (L_SHIPMODE).
var shipModes = []string{"REG AIR", "AIR", "RAIL", "TRUCK", "MAIL", "FOB", "SHIP"}

// q13Words1 and q13Words2 are dists.dss "Q13a" and "Q13b", the two words
// of Q13's comment pattern, with their weights per entry.
var (
	q13Words1 = []string{"special", "pending", "unusual", "express"}
	q13Words2 = []string{"packages", "requests", "accounts", "deposits"}
)

const (
	q13Weight1 = 20
	q13Weight2 = 40
)
