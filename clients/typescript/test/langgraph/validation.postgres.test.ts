import { validate } from "./validation.js";

await validate("postgres");
