package lab

// HopHistogram counts the delivered lookups by their hops: element h is
// how many took h hops, from 0 to the longest route. It is the overlay
// family's series "hops" (Rowstron & Druschel 2001, figure 5, plots the
// same distribution as fractions).
func HopHistogram(hops []int) []float64 {
	var out []float64
	for _, h := range hops {
		for len(out) <= h {
			out = append(out, 0)
		}
		out[h]++
	}
	return out
}
