"""Small example models written the way popular zoos write them: functionals, operators and
reused modules in `forward`. `migrator fix --diff examples/models` shows what migrator does."""
