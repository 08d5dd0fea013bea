package position

import "testing"

// BenchmarkVivaldiRound is one round of Vivaldi on the 1,000-node
// Internet: every node takes one sample.
func BenchmarkVivaldiRound(b *testing.B) {
	v, err := NewVivaldi(thousand(), DefaultVivaldi)
	if err != nil {
		b.Fatal(err)
	}
	v.Run(100) // past the first, cheap-looking rounds at one point
	for b.Loop() {
		v.Round()
	}
}

// BenchmarkVivaldiConverge is the whole run the CLI reports: 1,000 rounds
// from the origin on the 1,000-node Internet.
func BenchmarkVivaldiConverge(b *testing.B) {
	m := thousand()
	for b.Loop() {
		v, err := NewVivaldi(m, DefaultVivaldi)
		if err != nil {
			b.Fatal(err)
		}
		v.Run(1000)
	}
}

// BenchmarkGNPEmbed embeds 15 landmarks and 985 hosts in 7 dimensions.
func BenchmarkGNPEmbed(b *testing.B) {
	m := thousand()
	for b.Loop() {
		if _, err := EmbedGNP(m, DefaultGNP); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGPSLocate solves one 8-satellite fix with a 1 ms clock bias.
func BenchmarkGPSLocate(b *testing.B) {
	sc, err := NewGPSScenario(DefaultGPS)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Locate(sc.Signals); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvaluate measures the relative error of all 499,500 pairs.
func BenchmarkEvaluate(b *testing.B) {
	m := thousand()
	v, err := NewVivaldi(m, DefaultVivaldi)
	if err != nil {
		b.Fatal(err)
	}
	v.Run(100)
	for b.Loop() {
		Evaluate(m, v)
	}
}
