package pkg

// Exported: T, G, T.M, G.M (generic receiver), F, V, C; not: T.m, t, t.M, f, v.

type T struct{ Field int }

type G[P any] struct{}

func (T) M()    {}
func (*T) m()   {}
func (G[P]) M() {}
func F()        {}
func f()        {}

type t struct{}

func (t) M() {}

var V, v = 1, 2

const C = 3
