"""The side wagers and variations of 58 Pa. Code chapters 631c (Baccarat) and 627b (Minibaccarat).

Each module holds one section's wagers as pure rules implementing
`controller.rules.wager.WagerRule`, their paytables as data, and their exact
par distributions, and registers them with the wager registry at its end
(`controller.rules.registry.WAGER_MODULES` names each module and its keys), so
that a table imports only the side wagers it offers.
"""
