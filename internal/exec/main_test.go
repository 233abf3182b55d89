package exec

import (
	"testing"

	"github.com/pgonion/pgonion/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
