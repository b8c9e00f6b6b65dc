"""Studies: one-off investigations that justified a default, or measured an alternative and did not adopt it
(DPSVC's feature map, linear share, column balance and horizon floor; the trainers' remaining gaps; search
ideas)."""
