// Package calc is meta-agent's Go example: a tiny library with tests, detected by its go.mod
// (the Go preset: go vet, go test).
package calc

// Sum adds the values.
func Sum(values []int) int {
	total := 0
	for _, v := range values {
		total += v
	}
	return total
}

// Mean is the average of the values, 0 for none.
func Mean(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	total := 0.0
	for _, v := range values {
		total += v
	}
	return total / float64(len(values))
}
