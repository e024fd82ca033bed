/* Prints whether the linked m.o is the one m.h was generated with
 * (m_artifact_matches_header, from the descriptor checksum). */
#include "m.h"

#include <stdio.h>

int main(void) {
  printf("matches header: %d\n", m_artifact_matches_header());
  return 0;
}
