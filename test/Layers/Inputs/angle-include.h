#include <partita/Transforms/Passes.h>
