"""The game rules: pure functions and sans-I/O state, no I/O, clocks or randomness of their own.

Where to start:

- `submission.load_submission(path) -> Submission` / `parse_submission(data, source)`:
  the table's Rules Submission (TOML), every error a `SubmissionError` line.
- `game.load_game(path) -> Game` / `game.build_game(submission)`: `Game.new_coup()`,
  `Game.burn_count(first_card)`, `Game.wager_rules`, `Game.shoe_size`, `Game.cut`,
  `Game.reshuffles_at_cover_card`; `game.Coup` is the protocol both coups satisfy
  (`baccarat.BaccaratCoup` for 631a, `twentyone.TwentyOneCoup` for 681a).
- `settlement.settle_round(game, wagers, round_view, point)`: settlements in 631a.12(b)
  order; `VigorishLedger` for marked vigorish (631a.13(d)(2)); `void_round`, `add_ride`,
  `check_wager`.
- `registry`: the extension point where every wager registers under its config key.
- `par.compute_par_sheet(game)`: exact par sheets; `simulate.simulate(game, options)`.
- `shoe` and `irregularities`: cut, cover card, burn, last hand; 631a.15 / 681a.9 decisions.
- `money`: integer cents and the single rounding function.
"""
