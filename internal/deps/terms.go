package deps

import "math/bits"

// bitset is a set of candidate indexes of one variable. All sets of one
// variable have the same length.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func fullBitset(n int) bitset {
	b := newBitset(n)
	for i := 0; i < n; i++ {
		b.add(i)
	}
	return b
}

func (b bitset) add(i int)      { b[i/64] |= 1 << (uint(i) % 64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(uint(i)%64)) != 0 }
func (b bitset) clone() bitset  { return append(bitset(nil), b...) }
func (b bitset) isEmpty() bool  { return b.count() == 0 }

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// first returns the lowest index in the set, or -1.
func (b bitset) first() int {
	for i, w := range b {
		if w != 0 {
			return i*64 + bits.TrailingZeros64(w)
		}
	}
	return -1
}

func (b bitset) and(o bitset) bitset {
	out := make(bitset, len(b))
	for i := range b {
		out[i] = b[i] & o[i]
	}
	return out
}

func (b bitset) or(o bitset) bitset {
	out := make(bitset, len(b))
	for i := range b {
		out[i] = b[i] | o[i]
	}
	return out
}

func (b bitset) andNot(o bitset) bitset {
	out := make(bitset, len(b))
	for i := range b {
		out[i] = b[i] &^ o[i]
	}
	return out
}

func (b bitset) subsetOf(o bitset) bool {
	for i := range b {
		if b[i]&^o[i] != 0 {
			return false
		}
	}
	return true
}

func (b bitset) disjoint(o bitset) bool {
	for i := range b {
		if b[i]&o[i] != 0 {
			return false
		}
	}
	return true
}

// term is a statement about one variable. Positive: the variable is chosen,
// with a candidate in set. Negative: the variable is not chosen, or is
// chosen with a candidate outside set.
type term struct {
	v   *variable
	pos bool
	set bitset
}

func (t term) negate() term { return term{v: t.v, pos: !t.pos, set: t.set} }

// intersect is the statement that both t and o hold.
func (t term) intersect(o term) term {
	switch {
	case t.pos && o.pos:
		return term{t.v, true, t.set.and(o.set)}
	case t.pos:
		return term{t.v, true, t.set.andNot(o.set)}
	case o.pos:
		return term{t.v, true, o.set.andNot(t.set)}
	default:
		return term{t.v, false, t.set.or(o.set)}
	}
}

// alwaysTrue is a negative term over no candidate: it holds whatever
// happens.
func (t term) alwaysTrue() bool { return !t.pos && t.set.isEmpty() }

// impossible is a positive term over no candidate.
func (t term) impossible() bool { return t.pos && t.set.isEmpty() }

// satisfies says whether every state t allows is allowed by o.
func (t term) satisfies(o term) bool {
	switch {
	case t.pos && o.pos:
		return t.set.subsetOf(o.set)
	case t.pos:
		return t.set.disjoint(o.set)
	case o.pos:
		return false
	default:
		return o.set.subsetOf(t.set)
	}
}

// disjoint says whether no state is allowed by both t and o.
func (t term) disjoint(o term) bool {
	switch {
	case t.pos && o.pos:
		return t.set.disjoint(o.set)
	case t.pos:
		return t.set.subsetOf(o.set)
	case o.pos:
		return o.set.subsetOf(t.set)
	default:
		return false
	}
}

type relation int

const (
	satisfied relation = iota
	contradicted
	inconclusive
)
