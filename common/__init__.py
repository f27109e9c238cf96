"""Ground floor: helpers every other package may import (errors, text); imports nothing of ours."""
