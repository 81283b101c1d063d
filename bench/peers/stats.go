package main

import (
	"fmt"
	"sort"
)

// sample is the values of one figure over the runs.
type sample []float64

func (s sample) sorted() []float64 {
	c := append([]float64(nil), s...)
	sort.Float64s(c)
	return c
}

// median of the runs (mean of the middle two for an even count); 0 when empty.
func (s sample) median() float64 {
	if len(s) == 0 {
		return 0
	}
	c := s.sorted()
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

func (s sample) min() float64 {
	if len(s) == 0 {
		return 0
	}
	return s.sorted()[0]
}

func (s sample) max() float64 {
	if len(s) == 0 {
		return 0
	}
	return s.sorted()[len(s)-1]
}

// si prints v with a k/M suffix and three significant digits.
func si(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}
