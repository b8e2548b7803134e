#include "partita/Dialect/Partita/IR/PartitaDialect.h"
