package compare

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes the kmx.test.compare/v1 document, indented like every
// other kmx JSON report.
func WriteJSON(w io.Writer, res *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return fmt.Errorf("write the comparison: %w", err)
	}
	return nil
}
